//! A live run under attack. While the SV1 side and SV2 configurations A and C run, every
//! listener of every role (the node's RPC, ZMQ, TDP and IPC socket, the SV1 pool, the SRI
//! pool, translators, JDC and JDS, the links, the SV1, SV2 and JD taps, the metrics page)
//! gets garbage, an oversized line or frame, slow partial writes and hundreds of idle
//! connections. The run must end whole: no role exits, every side's shares keep being
//! accepted through the attack, and no role's memory grows by more than
//! [`MAX_GROWTH_BYTES`] and a bound per idle connection.

use crate::common::{events, out_dir, run_scenario, Killed};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Idle connections held open on each listener for the whole attack, as many as the
/// descriptor limit allows (on this machine, 20,000: about 700 on each of 27 listeners;
/// the test says how many). A link relays each to its tap and the tap to its pool, so
/// those get more.
const IDLE_PER_LISTENER: usize = 1_000;
/// Descriptors the test keeps for itself besides the attack's.
const OWN_FDS: usize = 1_000;
/// Connections per listener that each send this much random garbage.
const GARBAGE_CONNECTIONS: usize = 4;
const GARBAGE_BYTES: usize = 64 * 1024;
/// One connection per listener sends a line (or frame, or HTTP body) this long without an
/// end: past the 32 MiB body limit bitcoind (and our node) hold a request to.
const OVERSIZED_BYTES: usize = 48 << 20;
/// Connections per listener that dribble a byte every [`SLOW_EVERY`].
const SLOW_CONNECTIONS: usize = 4;
const SLOW_EVERY: Duration = Duration::from_millis(200);
const ATTACK: Duration = Duration::from_secs(15);
/// What a role's resident memory may grow by under the attack: this much, plus
/// [`GROWTH_PER_IDLE`] for each idle connection per listener. Measured here with 703 idle
/// connections per listener: the SRI pool (its JDS listens too) grew by 115 MiB, 82 KiB a
/// connection; the node (five faces: RPC, two ZMQ, Template Provider, IPC) by 55 MiB;
/// the rest by 17 to 85 MiB. A role that buffered what it is sent without bound would hold
/// the 48 MiB request on top of its connections.
const MAX_GROWTH_BYTES: u64 = 64 << 20;
/// Room per idle connection per listener: two listeners' worth of what the SRI pool uses.
const GROWTH_PER_IDLE: u64 = 160 << 10;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Listener {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl Listener {
    fn connect(&self) -> Option<Box<dyn Write + Send>> {
        let timeout = Some(Duration::from_secs(1));
        match self {
            Listener::Tcp(addr) => {
                let s = TcpStream::connect_timeout(addr, Duration::from_secs(1)).ok()?;
                s.set_write_timeout(timeout).ok()?;
                Some(Box::new(s))
            }
            Listener::Unix(path) => {
                let s = UnixStream::connect(path).ok()?;
                s.set_write_timeout(timeout).ok()?;
                Some(Box::new(s))
            }
        }
    }
}

/// Bytes no parser expects (xorshift: the test needs no random crate).
fn garbage(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Every way in at once on `target` until `until`; returns how many connections it made.
fn attack(target: &Listener, idle_count: usize, seed: u64, until: Instant) -> usize {
    let mut made = 0;
    let mut idle = Vec::new();
    for _ in 0..idle_count {
        if let Some(c) = target.connect() {
            idle.push(c);
        }
    }
    made += idle.len();
    for i in 0..GARBAGE_CONNECTIONS {
        if let Some(mut c) = target.connect() {
            made += 1;
            let _ = c.write_all(&garbage(seed + i as u64, GARBAGE_BYTES));
        }
    }
    if let Some(mut c) = target.connect() {
        made += 1;
        // One request every face reads its own way: an HTTP POST whose body passes the
        // RPC limit, an SV1 line that never ends after its headers, and an SV2 frame whose
        // header ("POST /") claims 3 MiB of payload and whose Noise handshake fails.
        let _ = write!(
            c,
            "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic dTpw\r\nContent-Length: {OVERSIZED_BYTES}\r\n\r\n"
        );
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..OVERSIZED_BYTES / chunk.len() {
            if c.write_all(&chunk).is_err() {
                break;
            }
        }
    }
    let mut slow: Vec<_> = (0..SLOW_CONNECTIONS)
        .filter_map(|_| target.connect())
        .collect();
    made += slow.len();
    let message = b"{\"id\":1,\"method\":\"mining.subscribe\",\"params\":[]}\n";
    let mut at = 0;
    while Instant::now() < until {
        for c in &mut slow {
            let _ = c.write_all(&message[at % message.len()..][..1]);
        }
        at += 1;
        std::thread::sleep(SLOW_EVERY);
    }
    made
}

/// The addresses a `role ready` log line names: its `listen=` or every address in its
/// `ready=` JSON (`tcp://` endpoints included).
fn listeners_named(line: &str) -> Vec<Listener> {
    let mut found = Vec::new();
    if let Some(json) = line.split("ready=").nth(1) {
        if let Ok(Value::Object(ready)) = serde_json::from_str::<Value>(json.trim()) {
            // An address, or a list of them (a link's routes).
            let addresses = ready.values().flat_map(|v| match v {
                Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                v => v.as_str().into_iter().collect::<Vec<_>>(),
            });
            for v in addresses {
                if let Ok(addr) = v.trim_start_matches("tcp://").parse() {
                    found.push(Listener::Tcp(addr));
                }
            }
        }
    }
    if let Some(rest) = line.split("listen=").nth(1) {
        let addr = rest.split_whitespace().next().unwrap_or_default();
        if let Ok(addr) = addr.trim_matches('"').parse() {
            found.push(Listener::Tcp(addr));
        }
    }
    found
}

/// Every address a role's spec (`roles/*.json`) says it listens on, under any key that
/// names a listener (`listen`, `jds_listen`, ...): what a role serves besides the one
/// address it reports ready on.
fn listeners_in_specs(dir: &Path) -> Vec<Listener> {
    fn walk(v: &Value, under_listen: bool, found: &mut Vec<Listener>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    walk(v, k.contains("listen"), found);
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, under_listen, found)),
            Value::String(s) if under_listen => {
                if let Ok(addr) = s.parse::<SocketAddr>() {
                    if addr.port() != 0 {
                        found.push(Listener::Tcp(addr));
                    }
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir.join("roles"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json") {
            let spec: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            walk(&spec, false, &mut found);
        }
    }
    found
}

/// Every Mining IPC socket under the run directory.
fn ipc_sockets(dir: &Path) -> Vec<Listener> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let socket = entry.path().join("regtest/node.sock");
        if socket.exists() {
            found.push(Listener::Unix(socket));
        }
    }
    found
}

#[test]
fn every_listener_survives_garbage_floods_and_idle_connections_during_a_run() {
    let dir = out_dir("attack");
    let mut child = run_scenario(
        "config-a",
        &dir,
        &[
            "--duration",
            "30s",
            "--set",
            "warmup=5s",
            "--set",
            r#"sides=["sv1", "sv2-a", "sv2-c"]"#,
            "--set",
            "miners.shares_per_min=30",
            "--set",
            "network.block_interval=10s",
        ],
    )
    .env("RUST_LOG", "info")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Both outputs, line by line, on one channel.
    let (tx, lines) = mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let tx_err = tx.clone();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(format!("out {l}"));
        }
    });
    std::thread::spawn(move || {
        for l in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx_err.send(format!("err {l}"));
        }
    });
    let mut child = Killed(child);

    // Every role is up when the first progress line is printed.
    let mut targets = Vec::new();
    let mut log = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("the run never started:\n{}", log.join("\n")));
        if line.contains("role ready") {
            targets.extend(listeners_named(&line));
        }
        if let Some(url) = line.split("metrics on http://").nth(1) {
            let addr = url.split('/').next().unwrap();
            targets.push(Listener::Tcp(addr.parse().unwrap()));
        }
        let started = line.starts_with("err [");
        log.push(line);
        if started {
            break;
        }
    }
    targets.extend(listeners_in_specs(&dir));
    targets.extend(ipc_sockets(&dir));
    targets.sort();
    targets.dedup();
    assert!(
        targets.len() >= 15,
        "every role's listeners were found: {targets:?}\n{}",
        log.join("\n")
    );

    let fds = harness::limits::raise_fd_limit() as usize;
    let per_listener = IDLE_PER_LISTENER.min(fds.saturating_sub(OWN_FDS) / targets.len());
    eprintln!(
        "{} listeners, {per_listener} idle connections each (descriptor limit {fds})",
        targets.len()
    );
    assert!(
        per_listener >= 100,
        "too few descriptors to attack with: {fds}"
    );

    let attack_start = probe::mono_ns();
    let until = Instant::now() + ATTACK;
    let attackers: Vec<_> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let t = t.clone();
            std::thread::spawn(move || (t.clone(), attack(&t, per_listener, i as u64 + 7, until)))
        })
        .collect();
    let made: Vec<(Listener, usize)> = attackers.into_iter().map(|a| a.join().unwrap()).collect();
    let attack_end = probe::mono_ns();
    for (target, n) in &made {
        eprintln!("attacked {target:?} with {n} connections");
    }

    let status = child.0.wait().unwrap();
    while let Ok(line) = lines.try_recv() {
        log.push(line);
    }
    let tail: Vec<&String> = log.iter().rev().take(40).collect();
    assert!(status.success(), "the run failed under attack: {tail:?}");
    for (target, n) in &made {
        assert!(*n > 0, "{target:?} took no connection at all");
    }

    let exited: Vec<Value> = events(&dir, "harness")
        .into_iter()
        .filter(|e| e["kind"] == "role_exited")
        .collect();
    assert!(exited.is_empty(), "roles died under attack: {exited:?}");

    for tap in ["tap-sv1", "tap-sv2-a", "tap-sv2-c"] {
        let accepted = events(&dir, tap)
            .iter()
            .filter(|e| e["kind"] == "share_judged" && e["verdict"] == "accepted")
            .filter(|e| (attack_start..=attack_end).contains(&e["t_ns"].as_u64().unwrap()))
            .count();
        eprintln!("{tap}: {accepted} shares accepted during the attack");
        assert!(accepted > 0, "{tap}: no share accepted during the attack");
    }

    // Memory: each role's last sample before the attack against its highest during it and
    // shortly after.
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    let mut before: BTreeMap<String, u64> = BTreeMap::new();
    let mut peak: BTreeMap<String, u64> = BTreeMap::new();
    for s in samples
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        let (Some(role), Some(t), Some(rss)) = (
            s["role"].as_str(),
            s["t_ns"].as_u64(),
            s["rss_bytes"].as_u64(),
        ) else {
            continue;
        };
        // The host's memory in use is the machine's, the attacking test's included.
        if role == "host" {
            continue;
        }
        if t < attack_start {
            before.insert(role.to_string(), rss);
        } else if t <= attack_end + 3_000_000_000 {
            let p = peak.entry(role.to_string()).or_default();
            *p = (*p).max(rss);
        }
    }
    assert!(before.len() >= 10, "samples of every role: {before:?}");
    let bound = MAX_GROWTH_BYTES + GROWTH_PER_IDLE * per_listener as u64;
    for (role, base) in &before {
        let top = peak.get(role).copied().unwrap_or(*base);
        let grew = top.saturating_sub(*base);
        eprintln!(
            "{role}: {:.1} MiB before, {:.1} MiB at most under attack (+{:.1} MiB)",
            *base as f64 / 1048576.0,
            top as f64 / 1048576.0,
            grew as f64 / 1048576.0
        );
        assert!(
            grew <= bound,
            "{role} grew by {grew} bytes under attack (bound {bound})"
        );
    }
}
