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
                o.lost_s_per_miner
                    .map_or("not priced".into(), |s| format!("{s:.1}")),
                o.blocks_missed.map_or("-".into(), |b| format!("{b:.3e}")),
                o.lost_sats.map_or("-".into(), |s| grouped(s, 1)),
            ]
        })
        .collect();
    let mut blocks = vec![
        Block::Para(format!(
            "The far end of every side's link went away alike: `drop` closes every connection and refuses new ones, as a pool that stopped; `stall` keeps them open and holds what is sent until its end, as a pool that hangs. Each miner is without valid work from the fault's start to its first job after it (its firmware's reconnect timers are scenario parameters: `miners.reconnect_after`, `miners.retry_every`, `miners.silence_timeout`); a miner not back by the window's end counts until then. The cost of a pool that drops is that lost time, weighed by the miners' hashrates, at {}; a stall or a JDS away leaves the miners their job, so their next one says nothing of work lost, and is not priced.",
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
    let cost = match (o.lost_s_per_miner, o.lost_sats) {
        (Some(lost), Some(sats)) => format!(
            "{lost:.1} s of work lost a miner ({} sats for the farm)",
            grouped(sats, 1)
        ),
        _ => format!(
            "not priced: a {} leaves the miners their job, so their next one says nothing of work lost ({} shares accepted during it, {} rejected until one was accepted after it)",
            if o.target == "jds" { "JDS away" } else { "stall" },
            o.accepted_during,
            o.rejected_until_back
        ),
    };
    if o.back < o.miners {
        format!(
            "{side}: after {what}, {} of {} miners had no new job by the window's end; {cost}.",
            o.miners - o.back,
            o.miners,
        )
    } else {
        format!(
            "{side}: {what} left miners without a new job {} s (median; {} s after it ended); {cost}.",
            o.without_work_s.as_ref().and_then(|d| d.p50).map_or("-".into(), |v| format!("{v:.1}")),
            o.recovery_s.as_ref().and_then(|d| d.p50).map_or("-".into(), |v| format!("{v:.1}")),
        )
    }
}
