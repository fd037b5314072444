//! An attacker on the path between a farm and its pool (scenario `link.attack`): what an
//! ISP, a compromised router or a hostile network can do to the streams it carries.
//!
//! SV1 travels in plaintext, so the attacker reads and rewrites it, and the ends cannot
//! tell. SV2 is encrypted and authenticated (Noise): the same attacker can only change
//! bytes it cannot read, which the ends detect. The attacker records what it did
//! ([`Event::AttackApplied`]) and how each connection it changed ended
//! ([`Event::AttackedConnectionClosed`]); the pool's and the tap's records say whom the
//! work was credited to.

use crate::Direction;
use probe::event::{AttackAction, LinkEnd};
use probe::{mono_ns, Event, Recorder};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the attacker does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Attack {
    /// The classic hashrate hijack. SV1 `mining.authorize` and `mining.submit` name the
    /// attacker's worker `account` instead of the farm's; on a connection authorized
    /// before the attack began, the attacker first authorizes its own worker and swallows
    /// the answer. The pool credits the attacker; the miners see their shares accepted. On
    /// a stream it cannot read as SV1 (SV2's Noise), its rewrite lands on ciphertext: it
    /// changes one byte of the first chunk each connection sends after the attack began.
    HijackWorker { account: String },
    /// Flips one bit of every `every_bytes`-th byte, each way: line noise, or a middlebox
    /// that mangles what it carries.
    Tamper { every_bytes: u64 },
}

impl Attack {
    /// The attack's name in a scenario.
    pub fn kind(&self) -> &'static str {
        match self {
            Attack::HijackWorker { .. } => "hijack-worker",
            Attack::Tamper { .. } => "tamper",
        }
    }
}

/// An attack and when it begins, after the link starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledAttack {
    pub attack: Attack,
    pub begins_after: Duration,
}

/// The id the attacker gives the authorization it injects: a string no miner uses.
const INJECTED_ID: &str = "attacker-authorize";

/// The attacker of one link: shared by its connections.
pub struct Attacker {
    attack: Attack,
    begins_at_ns: u64,
    recorder: Recorder,
    connections: AtomicU64,
}

impl Attacker {
    /// Starts the clock of `scheduled`; records [`Event::AttackBegan`] when it begins.
    pub fn start(scheduled: ScheduledAttack, recorder: Recorder) -> Arc<Attacker> {
        let begins_at_ns = mono_ns() + scheduled.begins_after.as_nanos() as u64;
        let attacker = Arc::new(Attacker {
            attack: scheduled.attack,
            begins_at_ns,
            recorder,
            connections: AtomicU64::new(0),
        });
        let announcing = attacker.clone();
        tokio::spawn(async move {
            crate::timer::sleep_until_ns(announcing.begins_at_ns).await;
            announcing.recorder.record(Event::AttackBegan {
                attack: announcing.attack.kind().to_string(),
            });
        });
        attacker
    }

    fn active(&self) -> bool {
        mono_ns() >= self.begins_at_ns
    }

    /// The attacker's hold on a new connection.
    pub(crate) fn connection(self: &Arc<Self>) -> Arc<Mutex<Connection>> {
        Arc::new(Mutex::new(Connection {
            attacker: self.clone(),
            conn: self.connections.fetch_add(1, Ordering::Relaxed),
            protocol: Protocol::Unknown,
            partial: [Vec::new(), Vec::new()],
            own_worker_authorized: false,
            opaque_changed: false,
            bytes_seen: [0, 0],
            applied: false,
            closed: false,
        }))
    }
}

/// How the attacker reads a connection, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Unknown,
    /// JSON lines: SV1.
    Sv1,
    /// Anything else: for SV2, Noise's handshake and then ciphertext.
    Opaque,
}

/// What the attacker knows of one connection and holds of its bytes.
pub(crate) struct Connection {
    attacker: Arc<Attacker>,
    conn: u64,
    protocol: Protocol,
    /// An SV1 line not yet complete, per direction (up, down).
    partial: [Vec<u8>; 2],
    own_worker_authorized: bool,
    opaque_changed: bool,
    bytes_seen: [u64; 2],
    applied: bool,
    closed: bool,
}

fn index(direction: Direction) -> usize {
    match direction {
        Direction::Up => 0,
        Direction::Down => 1,
    }
}

impl Connection {
    /// The bytes to send on for `chunk`, read going `direction`.
    pub(crate) fn pass(&mut self, direction: Direction, chunk: &[u8]) -> Vec<u8> {
        if self.protocol == Protocol::Unknown && direction == Direction::Up {
            self.protocol = match chunk.iter().find(|b| !b.is_ascii_whitespace()) {
                Some(b'{') => Protocol::Sv1,
                _ => Protocol::Opaque,
            };
        }
        match self.attacker.attack.clone() {
            Attack::Tamper { every_bytes } => self.tamper(direction, chunk, every_bytes),
            Attack::HijackWorker { account } => match self.protocol {
                Protocol::Sv1 => self.hijack_lines(direction, chunk, &account),
                _ => self.change_ciphertext(direction, chunk),
            },
        }
    }

    fn record(&mut self, direction: Direction, action: AttackAction) {
        self.applied = true;
        self.attacker.recorder.record(Event::AttackApplied {
            conn: self.conn,
            up: direction == Direction::Up,
            action,
        });
    }

    fn tamper(&mut self, direction: Direction, chunk: &[u8], every_bytes: u64) -> Vec<u8> {
        let seen = &mut self.bytes_seen[index(direction)];
        let first = *seen;
        *seen += chunk.len() as u64;
        let mut out = chunk.to_vec();
        if !self.attacker.active() {
            return out;
        }
        let every = every_bytes.max(1);
        // The stream's byte numbers every_bytes, 2 * every_bytes, ... that fall in this chunk.
        let mut next = (first / every + 1) * every;
        while next <= first + chunk.len() as u64 {
            out[(next - first - 1) as usize] ^= 0x01;
            self.record(direction, AttackAction::ByteFlipped);
            next += every;
        }
        out
    }

    /// SV2's stream read by an attacker who cannot decrypt it: its rewrite of the channel's
    /// identity changes a byte of the first chunk the farm sends once the attack is on.
    fn change_ciphertext(&mut self, direction: Direction, chunk: &[u8]) -> Vec<u8> {
        let mut out = chunk.to_vec();
        if direction == Direction::Up
            && !self.opaque_changed
            && !out.is_empty()
            && self.attacker.active()
        {
            let middle = out.len() / 2;
            out[middle] ^= 0xff;
            self.opaque_changed = true;
            self.record(direction, AttackAction::CiphertextChanged);
        }
        out
    }

    /// SV1 read line by line: complete lines go on (rewritten once the attack is on), a
    /// partial one waits for its end.
    fn hijack_lines(&mut self, direction: Direction, chunk: &[u8], account: &str) -> Vec<u8> {
        let mut held = std::mem::take(&mut self.partial[index(direction)]);
        held.extend_from_slice(chunk);
        let complete = held.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        self.partial[index(direction)] = held.split_off(complete);
        if !self.attacker.active() {
            return held;
        }
        let mut out = Vec::with_capacity(held.len() + 128);
        for line in held.split_inclusive(|&b| b == b'\n') {
            match direction {
                Direction::Up => self.rewrite_request(line, account, &mut out),
                Direction::Down if is_answer_to_injected(line) => {}
                Direction::Down => out.extend_from_slice(line),
            }
        }
        out
    }

    /// A farm's request, with the attacker's worker in place of the farm's.
    fn rewrite_request(&mut self, line: &[u8], account: &str, out: &mut Vec<u8>) {
        let Ok(mut request) = serde_json::from_slice::<Value>(line) else {
            out.extend_from_slice(line);
            return;
        };
        let method = request["method"].as_str().unwrap_or_default().to_string();
        let action = match method.as_str() {
            "mining.authorize" => AttackAction::AuthorizeRewritten,
            "mining.submit" => AttackAction::SubmitRewritten,
            _ => {
                out.extend_from_slice(line);
                return;
            }
        };
        if action == AttackAction::SubmitRewritten && !self.own_worker_authorized {
            let authorize = serde_json::json!({
                "id": INJECTED_ID,
                "method": "mining.authorize",
                "params": [account, "x"],
            });
            out.extend_from_slice(authorize.to_string().as_bytes());
            out.push(b'\n');
            self.record(Direction::Up, AttackAction::OwnWorkerAuthorized);
        }
        self.own_worker_authorized = true;
        match request["params"].get_mut(0) {
            Some(worker) => *worker = Value::from(account),
            None => {
                out.extend_from_slice(line);
                return;
            }
        }
        out.extend_from_slice(request.to_string().as_bytes());
        out.push(b'\n');
        self.record(Direction::Up, action);
    }

    /// Records how a connection the attacker changed ended: `by` the end that closed
    /// first, at `t_ns`.
    pub(crate) fn closed(&mut self, by: LinkEnd, t_ns: u64) {
        if self.applied && !self.closed {
            self.closed = true;
            self.attacker.recorder.record_at(
                t_ns,
                Event::AttackedConnectionClosed {
                    conn: self.conn,
                    by,
                },
            );
        }
    }
}

/// The pool's answer to the authorization the attacker injected, which the miner never
/// asked for.
fn is_answer_to_injected(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line).is_ok_and(|v| v["id"] == INJECTED_ID)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(attack: Attack, begins_after: Duration) -> Connection {
        let attacker = Attacker {
            attack,
            begins_at_ns: mono_ns() + begins_after.as_nanos() as u64,
            recorder: Recorder::disabled(),
            connections: AtomicU64::new(0),
        };
        Arc::into_inner(Arc::new(attacker).connection())
            .unwrap()
            .into_inner()
            .unwrap()
    }

    fn hijack() -> Attack {
        Attack::HijackWorker {
            account: "thief.rig".into(),
        }
    }

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn a_hijack_renames_the_worker_and_authorizes_its_own_on_a_connection_already_open() {
        let mut c = connection(hijack(), Duration::ZERO);
        let submit =
            br#"{"id":7,"method":"mining.submit","params":["farm.1","j1","00","5f","01"]}"#;
        let mut line = submit.to_vec();
        line.push(b'\n');
        // Split across two reads: nothing goes on before the line is whole.
        assert!(c.pass(Direction::Up, &line[..20]).is_empty());
        let out = text(c.pass(Direction::Up, &line[20..]));
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert_eq!(lines[0]["method"], "mining.authorize");
        assert_eq!(lines[0]["params"][0], "thief.rig");
        assert_eq!(lines[1]["id"], 7);
        assert_eq!(lines[1]["params"][0], "thief.rig");
        assert_eq!(lines[1]["params"][1], "j1");
        // The pool's answer to the injected authorization never reaches the miner; the
        // answer to the share does.
        let answers = format!(
            "{{\"id\":\"{INJECTED_ID}\",\"result\":true,\"error\":null}}\n{{\"id\":7,\"result\":true,\"error\":null}}\n"
        );
        let down = text(c.pass(Direction::Down, answers.as_bytes()));
        assert_eq!(down, "{\"id\":7,\"result\":true,\"error\":null}\n");
        // The next share is renamed without a second authorization.
        let out = text(c.pass(Direction::Up, &line));
        assert_eq!(out.lines().count(), 1);
    }

    #[test]
    fn before_the_attack_begins_the_stream_passes_unchanged() {
        let mut c = connection(hijack(), Duration::from_secs(3600));
        let line = b"{\"id\":2,\"method\":\"mining.authorize\",\"params\":[\"farm.1\",\"x\"]}\n";
        assert_eq!(c.pass(Direction::Up, line), line.to_vec());
        assert!(!c.applied);
    }

    #[test]
    fn a_hijack_of_a_stream_it_cannot_read_changes_one_byte_of_the_first_chunk_only() {
        let mut c = connection(hijack(), Duration::ZERO);
        let handshake = [0x5au8; 64];
        let out = c.pass(Direction::Up, &handshake);
        let changed: Vec<usize> = (0..64).filter(|&i| out[i] != handshake[i]).collect();
        assert_eq!(changed, vec![32]);
        assert_eq!(c.pass(Direction::Up, &handshake), handshake.to_vec());
        assert_eq!(c.pass(Direction::Down, &handshake), handshake.to_vec());
    }

    #[test]
    fn tamper_flips_one_bit_every_n_bytes_across_chunks() {
        let mut c = connection(Attack::Tamper { every_bytes: 10 }, Duration::ZERO);
        let zeros = [0u8; 7];
        // Bytes 1..=7, 8..=14, 15..=21: the 10th and the 20th flip.
        let a = c.pass(Direction::Up, &zeros);
        let b = c.pass(Direction::Up, &zeros);
        let d = c.pass(Direction::Up, &zeros);
        assert_eq!(a, zeros.to_vec());
        assert_eq!(b, vec![0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(d, vec![0, 0, 0, 0, 0, 1, 0]);
        // Each direction counts its own bytes.
        assert_eq!(c.pass(Direction::Down, &zeros), zeros.to_vec());
    }
}
