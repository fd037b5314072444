//! A report as plain data (sections of paragraphs, tables and charts), rendered to
//! Markdown and to one self-contained HTML file.

use crate::svg::escape;
use std::fmt::Write;

pub enum Block {
    Para(String),
    /// A highlighted remark (too few samples, partial run, method note).
    Note(String),
    Table {
        head: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// An inline SVG chart and its title.
    Chart {
        title: String,
        svg: String,
    },
    /// Charts side by side as the page's width allows: (title, svg) each.
    Figures(Vec<(String, String)>),
    /// A lead in bold and its points, a sentence each.
    Points {
        lead: String,
        items: Vec<String>,
    },
}

impl Block {
    /// A table of one row a side turned so that the sides are its columns, as the
    /// terminal shows them: each other column becomes a row, its header the row's name.
    pub fn by_side(head: Vec<String>, rows: Vec<Vec<String>>) -> Block {
        let turned_head = std::iter::once(String::new())
            .chain(rows.iter().map(|r| r.first().cloned().unwrap_or_default()))
            .collect();
        let turned = (head.iter().enumerate().skip(1))
            .map(|(j, name)| {
                std::iter::once(name.clone())
                    .chain(rows.iter().map(|r| r.get(j).cloned().unwrap_or_default()))
                    .collect()
            })
            .collect();
        Block::Table {
            head: turned_head,
            rows: turned,
        }
    }
}

pub struct Section {
    pub title: String,
    pub blocks: Vec<Block>,
}

pub struct Document {
    pub title: String,
    pub subtitle: String,
    pub sections: Vec<Section>,
}

impl Document {
    pub fn to_markdown(&self) -> String {
        let mut out = format!("# {}\n\n{}\n", self.title, self.subtitle);
        for s in &self.sections {
            let _ = write!(out, "\n## {}\n", s.title);
            for b in &s.blocks {
                match b {
                    Block::Para(t) => {
                        let _ = write!(out, "\n{t}\n");
                    }
                    Block::Note(t) => {
                        let _ = write!(out, "\n> {t}\n");
                    }
                    Block::Table { head, rows } => {
                        let _ = write!(
                            out,
                            "\n| {} |\n|{}|\n",
                            head.join(" | "),
                            head.iter().map(|_| " --- ").collect::<Vec<_>>().join("|")
                        );
                        for r in rows {
                            let _ = writeln!(out, "| {} |", r.join(" | "));
                        }
                    }
                    Block::Chart { title, .. } => {
                        let _ = write!(out, "\n_Chart: {title} (in the HTML report)._\n");
                    }
                    Block::Figures(figures) => {
                        let titles: Vec<&str> = figures.iter().map(|(t, _)| t.as_str()).collect();
                        let _ = write!(
                            out,
                            "\n_Charts: {} (in the HTML report)._\n",
                            titles.join("; ")
                        );
                    }
                    Block::Points { lead, items } => {
                        let _ = write!(out, "\n**{lead}**\n\n");
                        for item in items {
                            let _ = writeln!(out, "- {item}");
                        }
                    }
                }
            }
        }
        out
    }

    pub fn to_html(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{t}</title><style>{STYLE}</style></head><body><header><h1>{t}</h1><p>{sub}</p></header><nav><ol>"#,
            t = escape(&self.title),
            sub = escape(&self.subtitle)
        );
        for (i, s) in self.sections.iter().enumerate() {
            let _ = write!(
                out,
                r##"<li><a href="#s{i}">{}</a></li>"##,
                escape(&s.title)
            );
        }
        out.push_str("</ol></nav><main>");
        for (i, s) in self.sections.iter().enumerate() {
            let _ = write!(out, r#"<section id="s{i}"><h2>{}</h2>"#, escape(&s.title));
            for b in &s.blocks {
                match b {
                    Block::Para(t) => {
                        let _ = write!(out, "<p>{}</p>", inline_code(&escape(t)));
                    }
                    Block::Note(t) => {
                        let _ = write!(out, r#"<p class="note">{}</p>"#, inline_code(&escape(t)));
                    }
                    Block::Table { head, rows } => {
                        out.push_str("<table><thead><tr>");
                        for h in head {
                            let _ = write!(out, "<th>{}</th>", escape(h));
                        }
                        out.push_str("</tr></thead><tbody>");
                        for r in rows {
                            out.push_str("<tr>");
                            for c in r {
                                // A short cell is a value: kept on one line.
                                let class = if c.chars().count() <= SHORT_CELL {
                                    r#" class="v""#
                                } else {
                                    ""
                                };
                                let _ = write!(out, "<td{class}>{}</td>", inline_code(&escape(c)));
                            }
                            out.push_str("</tr>");
                        }
                        out.push_str("</tbody></table>");
                    }
                    Block::Chart { svg, .. } => {
                        let _ = write!(out, r#"<figure>{svg}</figure>"#);
                    }
                    Block::Figures(figures) => {
                        out.push_str(r#"<div class="figures">"#);
                        for (_, svg) in figures {
                            let _ = write!(out, r#"<figure>{svg}</figure>"#);
                        }
                        out.push_str("</div>");
                    }
                    Block::Points { lead, items } => {
                        let _ = write!(
                            out,
                            r#"<div class="points"><strong>{}</strong><ul>"#,
                            escape(lead)
                        );
                        for item in items {
                            let _ = write!(out, "<li>{}</li>", inline_code(&escape(item)));
                        }
                        out.push_str("</ul></div>");
                    }
                }
            }
            out.push_str("</section>");
        }
        out.push_str("</main></body></html>\n");
        out
    }
}

/// `text` in backticks as code, as the Markdown of the same report shows it; an odd
/// backtick out stays as it is.
fn inline_code(escaped: &str) -> String {
    let parts: Vec<&str> = escaped.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return escaped.to_string();
    }
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{part}</code>");
        } else {
            out.push_str(part);
        }
    }
    out
}

/// A cell this short is a value (a number with its interval, a name), never wrapped.
const SHORT_CELL: usize = 16;

/// The page takes the window's width: charts side by side where two fit, tables as wide
/// as their columns need, prose in lines a reader can follow.
const STYLE: &str = "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1d2330;max-width:1800px;margin:0 auto;padding:16px 24px}\
h1{font-size:22px;margin:0 0 2px}h2{font-size:19px;border-bottom:1px solid #d8dce4;padding-bottom:4px;margin-top:28px}\
header p{color:#5a6274;margin:0;overflow-wrap:anywhere}nav ol{display:flex;flex-wrap:wrap;gap:2px 22px;color:#5a6274;list-style-position:inside;padding:0;margin:6px 0}\
p,.points{max-width:130ch}.points ul{margin:2px 0 8px}.figures{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:0 20px}.figures figure{margin:4px 0}\
table{border-collapse:collapse;margin:10px 0;font-variant-numeric:tabular-nums}th,td{border:1px solid #d8dce4;padding:4px 8px;text-align:left;overflow-wrap:break-word}td.v{white-space:nowrap}\
code{font-family:ui-monospace,monospace;font-size:13px;background:#f2f4f8;padding:0 3px;border-radius:3px}\
th{background:#f2f4f8}.note{background:#fff7e0;border-left:4px solid #e8b600;padding:6px 10px}\
figure{margin:12px 0}.chart{width:100%;max-width:900px;height:auto;font-family:inherit}.figures .chart{max-width:none}\
.chart .title{font-size:14px;font-weight:600}.chart .tick,.chart .legend{font-size:11px;fill:#3b4252}\
.chart .label{font-size:12px;fill:#3b4252}.chart .axis{stroke:#3b4252}.chart .grid{stroke:#e6e9ef}\
.chart .empty{font-size:14px;fill:#8a90a0}@media print{nav{display:none}section{break-inside:avoid-page}}";

#[cfg(test)]
mod tests {
    use super::{inline_code, Block};

    #[test]
    fn a_table_by_side_has_the_sides_as_columns() {
        let head = ["side", "accepted", "stale"].map(String::from).to_vec();
        let rows = vec![
            ["sv1", "216", "3"].map(String::from).to_vec(),
            ["sv2-a", "84", "0"].map(String::from).to_vec(),
        ];
        let Block::Table { head, rows } = Block::by_side(head, rows) else {
            panic!("a table");
        };
        assert_eq!(head, ["", "sv1", "sv2-a"]);
        assert_eq!(rows, [["accepted", "216", "84"], ["stale", "3", "0"]]);
    }

    #[test]
    fn backticks_become_code_in_html() {
        assert_eq!(
            inline_code("run `make run` or `make test`"),
            "run <code>make run</code> or <code>make test</code>"
        );
        // An odd one out is left alone.
        assert_eq!(inline_code("a ` b"), "a ` b");
        assert_eq!(inline_code("none"), "none");
    }
}
