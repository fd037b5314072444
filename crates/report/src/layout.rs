//! A page as headless Chromium lays it out at a window size: what sticks out past the
//! window's width and which numbers a line break split. Reports are held to none of either.

use anyhow::{bail, Context, Result};
use std::path::Path;

/// What the page found of itself once laid out.
#[derive(Debug)]
pub struct Layout {
    /// Elements whose right edge passes the window's width: tag and first words.
    pub too_wide: Vec<String>,
    /// Numbers (outside charts) drawn on more than one line.
    pub split_numbers: Vec<String>,
    /// Chart text (titles, legends, labels) that runs past its chart's edges.
    pub clipped_text: Vec<String>,
}

/// The page measures itself on load and writes what it found into the DOM Chromium dumps.
const PROBE: &str = r#"<script>addEventListener('load',()=>{
const w=document.documentElement.clientWidth;
const wide=[...document.querySelectorAll('body *')].filter(e=>e.getBoundingClientRect().right>w+1).map(e=>e.tagName+' '+(e.textContent||'').slice(0,40).replace(/[|"]/g,' '));
const split=[];const re=/[-+]?\d[\d,.]*%?/g;
const texts=document.createTreeWalker(document.body,NodeFilter.SHOW_TEXT);
for(let n=texts.nextNode();n;n=texts.nextNode()){
 if(n.parentElement.closest('svg'))continue;
 for(const m of n.data.matchAll(re)){
  const r=document.createRange();r.setStart(n,m.index);r.setEnd(n,m.index+m[0].length);
  const tops=new Set([...r.getClientRects()].filter(x=>x.width>0).map(x=>Math.round(x.top)));
  if(tops.size>1)split.push(m[0]);
 }
}
const clipped=[...document.querySelectorAll('svg text')].filter(t=>{const s=t.closest('svg').getBoundingClientRect();const r=t.getBoundingClientRect();return r.width>0&&(r.left<s.left-1||r.right>s.right+1);}).map(t=>t.textContent.slice(0,50).replace(/[|"]/g,' '));
document.body.setAttribute('data-clipped-text',clipped.join('|'));
document.body.setAttribute('data-too-wide',wide.join('|'));
document.body.setAttribute('data-split-numbers',split.join('|'));
});</script>"#;

/// Lays `html` out in a `width` x `height` window (a copy of it, with the probe, beside it).
pub fn measure(html: &Path, width: u32, height: u32) -> Result<Layout> {
    let page =
        std::fs::read_to_string(html).with_context(|| format!("cannot read {}", html.display()))?;
    let probed = html.with_extension("measured.html");
    std::fs::write(&probed, page.replace("</body>", &format!("{PROBE}</body>")))?;
    let profile = std::env::temp_dir().join(format!("stratum-bench-layout-{}", std::process::id()));
    let out = lifecycle::command("chromium")
        .args(crate::chromium_flags(&profile))
        .arg(format!("--window-size={width},{height}"))
        .arg("--dump-dom")
        .arg(format!("file://{}", probed.canonicalize()?.display()))
        .output()
        .context("cannot run chromium (install the Debian package chromium)")?;
    let _ = std::fs::remove_dir_all(&profile);
    let _ = std::fs::remove_file(&probed);
    let dom = String::from_utf8_lossy(&out.stdout);
    let found = |name: &str| -> Option<Vec<String>> {
        let value = dom.split(&format!("{name}=\"")).nth(1)?.split('"').next()?;
        Some(
            value
                .split('|')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        )
    };
    let clipped_text = found("data-clipped-text");
    match (
        found("data-too-wide"),
        found("data-split-numbers"),
        clipped_text,
    ) {
        (Some(too_wide), Some(split_numbers), Some(clipped_text)) => Ok(Layout {
            too_wide,
            split_numbers,
            clipped_text,
        }),
        _ => bail!(
            "{} did not measure itself in chromium ({})",
            html.display(),
            out.status
        ),
    }
}
