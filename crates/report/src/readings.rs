//! Short generated readings of results: words around numbers the analysis computed (the
//! published tool's text got its arithmetic wrong; here there is none).

use analysis::paths::PathReading;
use analysis::stats::Delta;

/// "sv2-c delivers new work 36% sooner than sv1: 77.9 ms against 122.0 ms on average
/// (-44.1 ms, 95% CI -50.0 to -38.0 ms)."
pub fn latency_delta(side: &str, base: &str, what: &str, d: &Delta) -> String {
    let pct = d.pct.map_or("an unmeasurable".to_string(), |p| {
        format!("{:.0}%", p.abs())
    });
    let direction = if d.delta <= 0.0 { "sooner" } else { "later" };
    let caveat = if d.significant {
        ""
    } else {
        "; the difference is within the noise (not significant at 95%)"
    };
    format!(
        "{side} {what} {pct} {direction} than {base}: {:.1} ms against {:.1} ms on average ({:+.1} ms, 95% CI {:+.1} to {:+.1} ms){caveat}.",
        d.mean_b, d.mean_a, d.delta, d.ci_low, d.ci_high
    )
}

/// What the path added beyond the configured delay it crosses, at the median (both from
/// the analysis).
pub fn over_path(side: &str, what: &str, p50_ms: f64, path: &PathReading) -> String {
    let added = path
        .added_p50_ms
        .map_or("nothing measurable".into(), |a| format!("{a:.1} ms"));
    format!(
        "{side}: {what} p50 {p50_ms:.1} ms; it crosses {}, configured at {:.1} ms, so the roles and relays added {added}.",
        path.crosses, path.delay_ms
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(a: f64, b: f64, lo: f64, hi: f64) -> Delta {
        Delta {
            mean_a: a,
            mean_b: b,
            delta: b - a,
            pct: Some((b - a) / a * 100.0),
            ci_low: lo,
            ci_high: hi,
            significant: lo > 0.0 || hi < 0.0,
        }
    }

    #[test]
    fn the_seeds_configuration_a_reads_70_percent_sooner() {
        // 40.9 ms against 138 ms: -97.1 ms, -70.36%.
        let text = latency_delta(
            "sv2-a",
            "sv1",
            "delivers new work",
            &d(138.0, 40.9, -105.0, -89.0),
        );
        assert_eq!(
            text,
            "sv2-a delivers new work 70% sooner than sv1: 40.9 ms against 138.0 ms on average (-97.1 ms, 95% CI -105.0 to -89.0 ms)."
        );
    }

    #[test]
    fn a_slower_side_within_the_noise_says_so() {
        let text = latency_delta(
            "sv2-c",
            "sv1",
            "gets work after a block",
            &d(100.0, 104.0, -2.0, 10.0),
        );
        assert!(text.contains("4% later"), "{text}");
        assert!(text.contains("+4.0 ms"), "{text}");
        assert!(text.contains("not significant"), "{text}");
    }

    #[test]
    fn over_path_names_what_the_path_crosses() {
        let path = PathReading {
            crosses: "the link, one way".into(),
            delay_ms: 50.0,
            added_p50_ms: Some(2.8),
        };
        assert_eq!(
            over_path("sv1", "miners got work on a new block", 52.8, &path),
            "sv1: miners got work on a new block p50 52.8 ms; it crosses the link, one way, configured at 50.0 ms, so the roles and relays added 2.8 ms."
        );
    }
}
