//! The report's "Outage" section: what each outage of the sides' pools or JDS cost, as
//! `analysis::outage` computed it.

use crate::document::{Block, Section};
use crate::svg::grouped;
use analysis::outage::SideOutage;
use analysis::Summary;
use probe::Dist;

/// Each side's outages and their cost; `None` without any.
pub(crate) fn section(summary: &Summary) -> Option<Section> {
    if summary.outages.is_empty() {
        return None;
    }
    let rows = (summary.outages.iter())
        .flat_map(|(side, outages)| outages.iter().map(move |o| (side, o)))
        .map(|(side, o)| {
            vec![
                side.clone(),
                format!(
                    "{} {} at {:.1} s for {:.1} s",
                    o.target, o.fault, o.began_s, o.lasted_s
                ),
                format!("{} of {}", o.back, o.miners),
                seconds(o.without_work_s.as_ref()),
                seconds(o.recovery_s.as_ref()),
                o.accepted_during.to_string(),
                o.rejected_until_back.to_string(),
                o.first_accepted_after_s
                    .map_or("-".into(), |s| format!("{s:.1}")),
                match (o.lost_s_per_miner, o.lost_is_rejected_work) {
                    (Some(s), false) => format!("{s:.1}"),
                    (Some(s), true) => format!(
                        "{s:.1}{} (rejected work)",
                        interval(o.lost_s_per_miner_ci, |x| format!("{x:.1}"))
                    ),
                    (None, _) => "not priced".into(),
                },
                o.blocks_missed.map_or("-".into(), |b| format!("{b:.3e}")),
                o.lost_sats.map_or("-".into(), |s| {
                    grouped(s, 1) + &interval(o.lost_sats_ci, |x| grouped(x, 1))
                }),
            ]
        })
        .collect();
    let mut blocks = vec![
        Block::Para(format!(
            "The far end of every side's link went away alike: `drop` closes every connection and refuses new ones, as a pool that stopped; `stall` keeps them open and holds what is sent until its end, as a pool that hangs. Each miner is without valid work from the fault's start to its first job after it (its firmware's timers are scenario parameters: `miners.reconnect_after`, `miners.retry_every`, `miners.silence_timeout`, and with a backup `miners.failover_after` and `miners.primary_check_every`); a miner not back by the window's end counts until then. The cost of a pool (or link) that drops is that lost time, weighed by the miners' hashrates, at {}; a stall or a JDS away leaves the miners their job, so their next one says nothing of work lost: their cost is the work the pool rejected from its start until it accepted a share again (shares held through a block come stale), beyond what its rejection rate outside the faults would have rejected anyway, as seconds of the farm's work, with the 95% interval of the rejected shares' count (exact, for a Poisson count).",
            crate::readings::the_farm(&summary.worth_assumptions),
        )),
        Block::Table {
            head: [
                "side",
                "fault",
                "miners back",
                "without work, s (median, max)",
                "after its end, s (median, max)",
                "shares accepted during",
                "rejected until one is accepted after",
                "first accepted after its end, s",
                "lost a miner, s",
                "blocks missed",
                "lost, sats",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        },
    ];
    if let Some(table) = backups(summary) {
        blocks.push(Block::Para("With a backup pool (scenario `backup.pool`): each miner's time without work above ends at the backup's first job. The firmware turns to it after `miners.failover_after` failures in a row and, while on it, checks its primary every `miners.primary_check_every`; the time without work on the way back counts in the time lost. A translator turns to its next upstream by itself, so its miners' turns are not seen; its backup's first accepted share is.".into()));
        blocks.push(table);
    }
    blocks.extend(
        (summary.outages.iter())
            .flat_map(|(side, outages)| outages.iter().map(move |o| (side, o)))
            .map(|(side, o)| Block::Note(reading(side, o))),
    );
    Some(Section {
        title: "Outage".into(),
        blocks,
    })
}

/// The backups' part of each outage, where a side had one; `None` where none did.
fn backups(summary: &Summary) -> Option<Block> {
    let rows: Vec<Vec<String>> = (summary.outages.iter())
        .flat_map(|(side, outages)| outages.iter().map(move |o| (side, o)))
        .filter(|(_, o)| o.used_backup())
        .map(|(side, o)| {
            vec![
                side.clone(),
                format!("{} {} at {:.1} s", o.target, o.fault, o.began_s),
                format!("{} of {}", o.failed_over, o.miners),
                o.first_accepted_on_backup_s
                    .map_or("-".into(), |s| format!("{s:.1}")),
                o.accepted_on_backup.to_string(),
                format!("{} of {}", o.returned, o.miners),
                seconds(o.returned_after_end_s.as_ref()),
                seconds(o.return_gap_s.as_ref()),
            ]
        })
        .collect();
    (!rows.is_empty()).then(|| Block::Table {
        head: [
            "side",
            "fault",
            "miners turned to the backup",
            "backup's first accepted share, s after the start",
            "accepted on the backup during",
            "miners back on the primary",
            "turned back, s after the end (median, max)",
            "without work on the way back, s (median, max)",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    })
}

/// " [lo, hi]", each end as `f` writes it; nothing without an interval.
fn interval(ci: Option<(f64, f64)>, f: impl Fn(f64) -> String) -> String {
    ci.map_or(String::new(), |(lo, hi)| format!(" [{}, {}]", f(lo), f(hi)))
}

fn seconds(d: Option<&Dist>) -> String {
    match d {
        Some(d) => format!(
            "{} ({})",
            d.p50.map_or("-".into(), |v| format!("{v:.1}")),
            d.max.map_or("-".into(), |v| format!("{v:.1}"))
        ),
        None => "-".into(),
    }
}

/// One outage's cost to one side in a sentence (the report's and the terminal's).
pub(crate) fn reading(side: &str, o: &SideOutage) -> String {
    let what = format!("the {} {} of {:.0} s", o.target, o.fault, o.lasted_s);
    let cost = match (o.lost_s_per_miner, o.lost_sats, o.lost_is_rejected_work) {
        (Some(lost), Some(sats), false) => format!(
            "{lost:.1} s of work lost a miner ({} sats for the farm)",
            grouped(sats, 1)
        ),
        (Some(lost), Some(sats), true) => format!(
            "the miners kept their job, and the pool rejected {} shares until it accepted one after it ({} accepted during it; {:.2} of them its usual rejections): {lost:.1} s{} of the farm's work lost ({} sats{} for the farm; the interval is the rejected shares' count's, a Poisson count's exact 95%)",
            o.rejected_until_back,
            o.accepted_during,
            o.rejected_anyway,
            interval(o.lost_s_per_miner_ci, |x| format!("{x:.1}")),
            grouped(sats, 1),
            interval(o.lost_sats_ci, |x| grouped(x, 1)),
        ),
        _ => format!(
            "not priced without the miners' hashrate ({} shares accepted during it, {} rejected until one was accepted after it)",
            o.accepted_during, o.rejected_until_back
        ),
    };
    let backup = match o.first_accepted_on_backup_s {
        Some(first) => format!(
            " Its backup accepted a first share {first:.1} s after the start{}.",
            match o.returned {
                0 => String::new(),
                n => format!(
                    "; {n} of {} miners were back on the primary {} s after its end (median)",
                    o.miners,
                    (o.returned_after_end_s.as_ref())
                        .and_then(|d| d.p50)
                        .map_or("-".into(), |v| format!("{v:.1}"))
                ),
            }
        ),
        None => String::new(),
    };
    let sentence = if o.back < o.miners {
        format!(
            "{side}: after {what}, {} of {} miners had no new job by the window's end; {cost}.",
            o.miners - o.back,
            o.miners,
        )
    } else {
        let after_end = match o.recovery_s.as_ref().and_then(|d| d.p50) {
            Some(v) => format!("median; {v:.1} s after it ended"),
            None => "median; all had work again before it ended".into(),
        };
        format!(
            "{side}: {what} left miners without a new job {} s ({after_end}); {cost}.",
            o.without_work_s
                .as_ref()
                .and_then(|d| d.p50)
                .map_or("-".into(), |v| format!("{v:.1}")),
        )
    };
    sentence + &backup
}
