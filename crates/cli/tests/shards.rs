//! A side whose relays cannot hold every miner in one process: `stratum-bench run` with
//! the descriptor limit lowered to 600 a process (as `ulimit -Hn 600` would), so 300
//! miners a side need each relay as three shards (a relay holds (600 - 256) / 2 = 172
//! miners, planned at 80%: 300 / 137 = 2.2, so 3), the pool still holding all 300.

use crate::common::{events, out_dir, run_scenario, summary};
use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;

/// Descriptors a process of the run may open.
const LIMIT: u64 = 600;

/// `stratum-bench run` of config-d (SV1 and D: every miner's connection crosses the link)
/// with `miners` a side and `args`, under the lowered limit.
fn run_limited(dir: &std::path::Path, miners: u32, args: &[&str]) -> std::process::Output {
    let count = format!("miners.count={miners}");
    let all: Vec<&str> = ["--set", &count].iter().chain(args).copied().collect();
    let mut command = run_scenario("config-d", dir, &all);
    // SAFETY: between fork and exec only setrlimit, which is async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: LIMIT,
                rlim_max: LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.output().unwrap()
}

/// Each side's link and tap run as three processes; the kernel spreads the miners over
/// them; every tap shard numbers its connections in its own range; the shares are judged
/// on every shard and summed as one side; the link's bytes are its shards' summed.
///
/// Blocks are rare here (10 minutes apart on average): SRI's pool stops serving when a
/// miner's connection lands between a new block's future template and its prev hash
/// (sv2-apps issue 715), and 300 miners connecting in 3 s with a block every 10 s hit that
/// window on a loaded machine. One run in about 200 still sees a block in the ramp, and
/// few of those hit the window. What the sharding is tested on needs no block: a shard
/// relays each of its connections as one process would, tips included.
#[test]
fn relays_past_one_process_run_as_shards_read_as_one() {
    let dir = out_dir("shards");
    let out = run_limited(
        &dir,
        300,
        &[
            "--duration",
            "30s",
            "--set",
            "warmup=10s",
            "--set",
            "network.block_interval=600s",
            "--set",
            "miners.hashes_per_share=16",
            "--set",
            "miners.ramp=3s",
        ],
    );
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    let s = summary(&dir);
    for side in ["sv1", "sv2-d"] {
        let refused = &s["sides"][side]["pool_refused"];
        assert!(
            refused.is_null(),
            "{side}'s pool stopped serving: {refused}"
        );
        assert!(
            text.contains(&format!("{side}: 300 miners: its link and tap run as 3 processes each (two descriptors a miner, 600 a process here)")),
            "the run did not say how it sharded {side}: {text}"
        );
        let roles: BTreeSet<&str> = (s["sides"][side]["roles"].as_object().unwrap().keys())
            .map(String::as_str)
            .collect();
        for relay in ["link", "tap"] {
            for name in [
                format!("{relay}-{side}"),
                format!("{relay}-{side}-shard2"),
                format!("{relay}-{side}-shard3"),
            ] {
                assert!(
                    roles.contains(name.as_str()),
                    "{name} has no CPU: {roles:?}"
                );
            }
        }
        // Each tap shard's connections, in its own range; together one for each miner.
        let mut every = BTreeSet::new();
        for (k, tap) in [
            format!("tap-{side}"),
            format!("tap-{side}-shard2"),
            format!("tap-{side}-shard3"),
        ]
        .iter()
        .enumerate()
        {
            let connections: BTreeSet<u64> = (events(&dir, tap).iter())
                .filter_map(|e| e["connection"].as_u64())
                .collect();
            let range = (k as u64 * 1_000_000 + 1)..=((k as u64 + 1) * 1_000_000);
            assert!(
                !connections.is_empty() && connections.iter().all(|c| range.contains(c)),
                "{tap}: connections {connections:?} not all in {range:?}"
            );
            every.extend(connections);
        }
        assert_eq!(every.len(), 300, "{side}: one connection a miner");
        // Every shard's verdicts count: nearly all the shares were judged and accepted.
        let shares = &s["sides"][side]["shares"];
        let (submitted, accepted) = (
            shares["submitted"].as_u64().unwrap(),
            shares["accepted"].as_u64().unwrap(),
        );
        assert!(
            submitted > 300 && accepted as f64 > 0.9 * submitted as f64,
            "{side}: {accepted} of {submitted} shares accepted: {shares}"
        );
        // The link's bytes are every shard's: the pool's end carries at least the shares'
        // lines up (an SV1 submit is over 100 bytes, an SV2 one 60 with its frame), more
        // than one shard alone (a third of them) could.
        let up = s["sides"][side]["bandwidth_bytes_per_s"]["pool"]["rx"]
            .as_f64()
            .unwrap();
        let shares_per_s = submitted as f64 / s["duration_s"].as_f64().unwrap();
        assert!(
            up > 60.0 * shares_per_s,
            "{side}: {up} B/s up the link for {shares_per_s} shares a second"
        );
    }
}

/// More miners than the pool's one process can hold is refused before anything starts,
/// naming the limit and the count that fits; so is a side that would be sharded with what
/// a shard cannot do (a backup pool).
#[test]
fn more_miners_than_one_process_holds_are_refused_before_anything_starts() {
    let dir = out_dir("shards-refused");
    // The run's error, once it failed.
    let refused = |miners, args: &[&str]| {
        let out = run_limited(&dir, miners, args);
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = refused(400, &[]);
    assert!(
        err.contains("`miners.count`: 400 miners need 656 file descriptors")
            && err.contains("allows 600 per process: at most 344 miners fit here"),
        "{err}"
    );
    assert!(!dir.join("events").exists(), "something started: {err}");
    let err = refused(300, &["--set", "backup.pool=true"]);
    assert!(
        err.contains("`backup.pool`")
            && err.contains("at most 172 miners a side run without shards here"),
        "{err}"
    );
}
