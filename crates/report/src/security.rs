//! The report's "Security" section: what an attacker on every side's link took, as
//! `analysis::security` computed it.

use crate::document::{Block, Section};
use crate::svg::{grouped, percent};
use analysis::security::{PlannedAttack, SideSecurity, WorkPct};
use analysis::Summary;

/// What the attack did to each side, and what that is worth; `None` without an attack.
pub(crate) fn section(summary: &Summary, planned: Option<&PlannedAttack>) -> Option<Section> {
    if summary.security.is_empty() {
        return None;
    }
    let attack = planned.map_or_else(|| "an attack".to_string(), describe);
    let work = |w: Option<WorkPct>| w.map_or("-".into(), |w| percent(Some(w.pct), w.ci, 1));
    let sats = |v: Option<f64>| v.map_or("-".into(), |v| grouped(v, 0));
    let interval = |ci: Option<(f64, f64)>| {
        ci.map_or(String::new(), |(lo, hi)| {
            format!(" [{}, {}]", grouped(lo, 0), grouped(hi, 0))
        })
    };
    let rows = (summary.security.iter())
        .map(|(side, s)| {
            let to_attacker = match s.hashed_for_attacker_pct {
                Some(hashed) => format!(
                    "{}; hashed on its coinbase: {hashed:.1}% of the farm's shares",
                    work(s.attacker_credited)
                ),
                None => work(s.attacker_credited),
            };
            vec![
                side.clone(),
                to_attacker,
                format!(
                    "{} (before: {})",
                    work(s.farm_credited_after),
                    work(s.farm_credited_before)
                ),
                format!(
                    "{} of {}{}",
                    s.attacker_shares,
                    s.attacker_shares + s.farm_shares,
                    match (s.attacker_split_pct, s.attacker_split_pct_ci) {
                        (Some(p), Some((lo, hi))) => {
                            format!(", {p:.1}% of the work [{lo:.1}, {hi:.1}]")
                        }
                        _ => String::new(),
                    }
                ),
                format!("{} / {}", s.miners_told_accepted, s.miners_told_rejected),
                format!(
                    "{} ({} by the pool's end, {} by the farm's)",
                    s.closed_by_pool + s.closed_by_farm,
                    s.closed_by_pool,
                    s.closed_by_farm
                ),
                detection(s),
                sats(s.stolen_sats_per_day),
                sats(s.denied_sats_per_day) + &interval(s.denied_sats_per_day_ci),
            ]
        })
        .collect();
    let mut blocks = vec![
        Block::Para(format!(
            "{attack}, on every side's link alike; each side's figures run from the moment its link recorded the attack's start to the window's end. The farm's work is its miners' hashrate (a scenario parameter) times the time; credited work is the accepted shares' difficulty by the side's share judge. Who was credited, and whether a session broke, come from the protocols. The worth is the farm's revenue lost each day the attack lasts, for {}: denied, the fall of the work credited to anyone against before the attack (at its point, with the 95% interval of the difference: a fall within the shares' noise has one that reaches 0); stolen, the attacker's part of what was still credited (of a job hijack, which the pool credits nothing: the part of the farm's shares hashed on the attacker's coinbase, whose blocks pay it). The attacker's shares give its part of the work credited after the attack began, with Wilson's 95% interval.",
            crate::readings::the_farm(&summary.worth_assumptions),
        )),
        Block::Table {
            head: [
                "side",
                "credited to the attacker, % of the farm's work",
                "credited to the farm, %",
                "attacker's shares",
                "miners told accepted / rejected",
                "sessions broken",
                "detected after, ms",
                "stolen, sats a day",
                "denied, sats a day",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        },
    ];
    blocks.extend(
        summary
            .security
            .iter()
            .map(|(side, s)| Block::Note(reading(side, s))),
    );
    let exited: Vec<&str> = (summary.unmatched.keys())
        .filter_map(|k| k.strip_prefix(analysis::summary::ROLE_EXITED))
        .collect();
    if !exited.is_empty() {
        blocks.push(Block::Note(format!(
            "Roles that exited during the run: {}. A side whose role exited mined nothing through it afterwards, which is part of what the attack denied.",
            exited.join(", ")
        )));
    }
    Some(Section {
        title: "Security".into(),
        blocks,
    })
}

/// The attack in words.
fn describe(p: &PlannedAttack) -> String {
    match p.account.as_deref() {
        Some(account) => format!(
            "From {:.0} s into the window an attacker on the path ran `{}`, crediting its worker `{account}`",
            p.at_s, p.kind
        ),
        None => format!(
            "From {:.0} s into the window an attacker on the path ran `{}`",
            p.at_s, p.kind
        ),
    }
}

fn detection(s: &SideSecurity) -> String {
    match &s.detection_ms {
        Some(d) => format!(
            "{} (max {})",
            d.p50.map_or("-".into(), |v| format!("{v:.1}")),
            d.max.map_or("-".into(), |v| format!("{v:.1}"))
        ),
        None if s.connections_changed > 0 => "never".into(),
        None => "-".into(),
    }
}

/// One side's answer in a sentence (the report's and the terminal's).
pub(crate) fn reading(side: &str, s: &SideSecurity) -> String {
    let broken = s.closed_by_pool + s.closed_by_farm;
    let share = |p: Option<f64>| p.map_or("an unknown share".into(), |p| format!("{p:.0}%"));
    let a_day = |v: Option<f64>| {
        v.map_or(String::new(), |v| {
            format!(" ({} sats a day)", grouped(v, 0))
        })
    };
    if let (Some(hashed), 0) = (s.hashed_for_attacker_pct, broken) {
        format!(
            "{side}: {hashed:.0}% of the farm's shares were on jobs whose coinbase paid the attacker, who takes the blocks of that work ({} found){}; the pool rejected {} shares meanwhile, and the miners were told of {}; a further {} of the farm's income is lost to anyone{}.",
            s.blocks_for_attacker,
            a_day(s.stolen_sats_per_day),
            s.rejected,
            s.miners_told_rejected,
            share(s.denied_pct),
            a_day(s.denied_sats_per_day)
        )
    } else if s.attacker_shares > 0 && broken == 0 {
        format!(
            "{side}: the attacker took {}{} of the farm's revenue and no session broke: the farm could not tell (its miners were told {} shares accepted, {} rejected).",
            share(s.stolen_pct),
            a_day(s.stolen_sats_per_day),
            s.miners_told_accepted,
            s.miners_told_rejected
        )
    } else if s.attacker_shares == 0 && broken > 0 {
        format!(
            "{side}: nothing was credited to the attacker; {broken} of the {} sessions it changed broke (median {} ms after its change), and {}{} of the farm's work was lost while they did.",
            s.connections_changed,
            s.detection_ms.as_ref().and_then(|d| d.p50).map_or("-".into(), |v| format!("{v:.1}")),
            share(s.denied_pct),
            a_day(s.denied_sats_per_day)
        )
    } else if s.attacker_shares == 0 && broken == 0 && s.connections_changed > 0 {
        format!(
            "{side}: the attacker changed {} sessions and none broke: the pool took what it sent as the farm's ({} shares rejected after the attack began; the miners were told of {}). Nothing was credited to the attacker.",
            s.connections_changed, s.rejected, s.miners_told_rejected
        )
    } else {
        format!(
            "{side}: {} shares credited to the attacker, {broken} of {} changed sessions broken.",
            s.attacker_shares, s.connections_changed
        )
    }
}
