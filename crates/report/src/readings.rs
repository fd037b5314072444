//! Short generated readings of results: words around numbers the analysis computed (the
//! published tool's text got its arithmetic wrong; here there is none).

use crate::svg::grouped;
use analysis::headline::VerdictRow;
use analysis::paths::PathReading;

/// The farm node's lag as it happened and the break-even, under the verdict it sets.
pub fn farm_node_lag(lag: &analysis::farm_lag::FarmNodeLag) -> String {
    let ms = |d: &probe::Dist| match (d.p50, d.mean) {
        (Some(p50), Some(mean)) => format!("median {p50:.1} ms, mean {mean:.1} ms"),
        _ => "no tips".into(),
    };
    format!(
        "farm node lag: {} assumed; measured {} over {} tips; the roles' own time beyond it {}; \
         break-even lag {}",
        lag.assumed,
        ms(&lag.lag_ms),
        lag.lag_ms.count,
        ms(&lag.own_ms),
        lag.break_even_in_words()
            .unwrap_or_else(|| "not measured".into())
    )
}

/// The node's template builds by who asked: what each waited for the node's state beside
/// what the build took, so a side that waited on another's build shows.
pub fn template_builds(builds: &[analysis::summary::TemplateBuilds]) -> Option<String> {
    let ms = |d: &probe::Dist| match (d.p50, d.max) {
        (Some(p50), Some(max)) => format!("{p50:.2} / {max:.2}"),
        _ => "-".into(),
    };
    let askers: Vec<String> = (builds.iter())
        .map(|b| {
            format!(
                "{} {} builds, waited {} ms, built in {} ms",
                b.asker,
                b.builds,
                ms(&b.queued_ms),
                ms(&b.build_ms)
            )
        })
        .collect();
    (!askers.is_empty()).then(|| {
        format!(
            "the node's template builds (median / max; each built outside the node's lock, so no getblocktemplate or TDP client waits on another's build; the wait also holds the asker's own catching up of the simulation, and one IPC connection's builds follow each other): {}",
            askers.join("; ")
        )
    })
}

/// "sv2-c delivers new work 36% sooner than sv1: 77.9 ms against 122.0 ms on average
/// (-44.1 ms, 95% CI -50.0 to -38.0 ms)."
pub fn latency_delta(side: &str, base: &str, what: &str, row: &VerdictRow) -> String {
    let (Some(sv2), Some(sv1), Some(delta)) = (row.sv2, row.sv1, row.delta) else {
        return format!("{side} against {base}: no samples on a side to compare ({what}).");
    };
    let pct = row.pct.map_or("an unmeasurable".to_string(), |p| {
        format!("{:.0}%", p.abs())
    });
    let direction = if delta <= 0.0 { "sooner" } else { "later" };
    let interval = match (row.ci, &row.no_interval) {
        (Some((lo, hi)), _) => format!(", 95% CI {lo:+.1} to {hi:+.1} ms"),
        (None, Some(why)) => format!("; {why}, so no interval"),
        (None, None) => String::new(),
    };
    let caveat = match (row.significant, row.ci) {
        (true, _) => "",
        (false, Some(_)) => "; the difference is within the noise (not significant at 95%, false discovery rate controlled)",
        (false, None) => "",
    };
    format!(
        "{side} {what} {pct} {direction} than {base}: {sv2:.1} ms against {sv1:.1} ms on average ({delta:+.1} ms{interval}){caveat}."
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

/// The farm every figure in sats is for: "a farm of 1 PH/s on 1 ZH/s with a 600 s block
/// worth 312,500,000 sats".
pub fn the_farm(a: &analysis::worth::WorthAssumptions) -> String {
    format!(
        "a farm of {} on {} with a {:.0} s block worth {} sats",
        analysis::worth::hashrate_label(a.farm_hashrate),
        analysis::worth::hashrate_label(a.network_hashrate),
        a.block_interval_s,
        grouped(a.block_value_sats.unwrap_or_default(), 0),
    )
}

/// What the run's world did to every side that the verdict carries: its hazards, and the
/// network's blocks when they came at a regular pace. Said under the verdicts, on the
/// terminal and in the report alike.
pub fn caveats(s: &analysis::Summary) -> impl Iterator<Item = String> {
    hazards_caveat(s)
        .into_iter()
        .chain(arrivals_caveat(s.network.arrivals))
}

/// Regular arrivals (`network.arrivals`) leave out the network's tips that follow one
/// another closely, and with them the stale work they make: the verdict's stale figures
/// are not the network's.
fn arrivals_caveat(arrivals: model::network::Arrivals) -> Option<String> {
    (arrivals == model::network::Arrivals::Regular).then(|| {
        "The rest of the network's blocks came one every gap exactly here (network.arrivals = \"regular\"; a scenario's default is \"poisson\", as blocks arrive), and only our miners' own came at random: few tips followed another closely, so the stale work and its worth above are not the network's. Run with network.arrivals = \"poisson\" before pricing stale work.".to_string()
    })
}

/// What a reader of the verdict must know of a run with an attacker or outages: they are
/// in its numbers.
fn hazards_caveat(s: &analysis::Summary) -> Option<String> {
    let what = match (s.security.is_empty(), s.outages.is_empty()) {
        (true, true) => return None,
        (false, true) => "an attacker on every side's link (section Security)",
        (true, false) => "outages of every side's pool (section Outage)",
        (false, false) => "an attacker on every side's link and outages of its pool (sections Security and Outage)",
    };
    Some(format!(
        "This run had {what}: the verdict and the worth include what they did to each side (its miners without work count as stale work); the section tells the two apart."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::metric::Headline;

    fn d(a: f64, b: f64, lo: f64, hi: f64) -> VerdictRow {
        VerdictRow {
            metric: Headline::NewJobMs,
            sv1: Some(a),
            sv2: Some(b),
            delta: Some(b - a),
            pct: Some((b - a) / a * 100.0),
            ci: Some((lo, hi)),
            p_value: Some(0.01),
            units: (20, 20),
            significant: lo > 0.0 || hi < 0.0,
            no_interval: None,
            method: Default::default(),
            modelled: None,
            assumed: None,
            tips_without_work: None,
            baseline_tips_without_work: None,
        }
    }

    #[test]
    fn regular_arrivals_are_said_under_the_verdict_and_poisson_ones_are_not() {
        use model::network::Arrivals;
        let said = arrivals_caveat(Arrivals::Regular).unwrap();
        assert!(said.contains(r#"network.arrivals = "regular""#), "{said}");
        assert!(said.contains("not the network's"), "{said}");
        assert_eq!(arrivals_caveat(Arrivals::Poisson), None);
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
    fn too_few_says_so_and_claims_nothing() {
        let mut row = d(100.0, 104.0, 0.0, 0.0);
        row.ci = None;
        row.significant = false;
        row.no_interval = Some("too few (n = 2 and 2 tips; 5 needed)".into());
        let text = latency_delta("sv2-c", "sv1", "gets work after a block", &row);
        assert_eq!(
            text,
            "sv2-c gets work after a block 4% later than sv1: 104.0 ms against 100.0 ms on average (+4.0 ms; too few (n = 2 and 2 tips; 5 needed), so no interval)."
        );
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
