//! One miner connection.

use super::templates::{PoolJob, EXTRANONCE2_SIZE};
use super::vardiff::Vardiff;
use super::{JobState, Shared, JOBS_KEPT};
use bitcoin::Target;
use probe::{Event, ShareVerdict};
use serde_json::{json, Map, Value};
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use sv1_wire::{codes, Id, Message, Method, ParseError, Response, Submit, Subscribed};

/// Unparseable lines tolerated before the connection is closed.
const MAX_BAD_LINES: u32 = 10;
/// Workers one connection may authorize (a farm proxy authorizes one per device), and the
/// longest name: what a connection's authorizations can hold is bounded (about 1 MiB).
const MAX_WORKERS: usize = 4096;
const MAX_WORKER_NAME: usize = 256;
/// Messages per second a connection may sustain (with a burst of twice that).
const MESSAGES_PER_SEC: f64 = 200.0;

/// What a miner is sent for a job.
pub(super) struct Notice<'j> {
    /// `mining.set_difficulty`, when the difficulty changed since the last job.
    pub(super) difficulty: Option<Message>,
    /// The job's `mining.notify` line.
    pub(super) line: &'j [u8],
}

/// What a miner's line calls for.
pub(super) struct Outcome {
    pub(super) replies: Vec<Response>,
    /// Why the connection closes, when it does.
    pub(super) close: Option<String>,
    /// The current job is due: the miner's first, or again under a new difficulty.
    pub(super) send_job: bool,
}

pub(super) struct Session {
    extranonce1: [u8; 4],
    subscribed: bool,
    workers: HashSet<String>,
    difficulty: f64,
    /// Set when the difficulty changed and the miner has not been told yet.
    difficulty_pending: bool,
    /// The lowest difficulty each job was sent under (shares in flight across a
    /// retarget are judged by the easier one).
    ///
    /// By job number, oldest first, the last [`JOBS_KEPT`] (older ones' shares are
    /// unknown jobs): a few a tip, read on every job and share, so a list.
    job_difficulty: VecDeque<(u64, f64)>,
    last_prev: Option<bitcoin::BlockHash>,
    seen: HashSet<(String, u64, u32, u32, i32)>,
    /// The merkle root of the last share's job and extranonce2: a miner rolls nonces and
    /// version bits under one extranonce2 for many shares, so most shares reuse it.
    last_root: Option<(String, u64, bitcoin::TxMerkleNode)>,
    version_mask: u32,
    vardiff: Vardiff,
    bad_lines: u32,
    tokens: f64,
    last_refill: Instant,
}

impl Session {
    pub(super) fn new(shared: &Shared) -> Session {
        let n = shared.next_extranonce1.fetch_add(1, Ordering::Relaxed);
        Session {
            extranonce1: n.to_be_bytes(),
            subscribed: false,
            workers: HashSet::new(),
            difficulty: shared.cfg.vardiff.start,
            difficulty_pending: true,
            job_difficulty: VecDeque::new(),
            last_prev: None,
            seen: HashSet::new(),
            last_root: None,
            version_mask: 0,
            vardiff: Vardiff::new(shared.cfg.vardiff),
            bad_lines: 0,
            tokens: 2.0 * MESSAGES_PER_SEC,
            last_refill: Instant::now(),
        }
    }

    fn ready(&self) -> bool {
        self.subscribed && !self.workers.is_empty()
    }

    /// What to send for `job`: `set_difficulty` when it changed, then the job's notify line
    /// (rendered once for all miners) with clean_jobs set when the tip moved for this
    /// miner, whatever the pool marked, and never on a job the miner already has (its
    /// work on it stays valid). Nothing when the miner has the job under its difficulty.
    pub(super) fn notify<'j>(&mut self, job: &'j PoolJob) -> Option<Notice<'j>> {
        let new_tip = self.last_prev != Some(job.job.prev_hash);
        let has_it = !new_tip && self.sent_under(job.number).is_some();
        if has_it && !self.difficulty_pending {
            return None;
        }
        let difficulty = self.difficulty_pending.then(|| {
            self.difficulty_pending = false;
            Message::notification(Method::SetDifficulty(self.difficulty))
        });
        if new_tip {
            self.job_difficulty.clear();
            self.seen.clear();
            self.last_prev = Some(job.job.prev_hash);
        }
        match (self.job_difficulty.iter_mut().rev()).find(|(n, _)| *n == job.number) {
            Some((_, sent)) => *sent = sent.min(self.difficulty),
            None => {
                self.job_difficulty.push_back((job.number, self.difficulty));
                if self.job_difficulty.len() > JOBS_KEPT {
                    self.job_difficulty.pop_front();
                }
            }
        }
        let clean = !has_it && (job.job.clean || new_tip);
        Some(Notice {
            difficulty,
            line: &job.notify_lines[usize::from(clean)],
        })
    }

    /// The difficulty job `number` was sent under, if it was.
    fn sent_under(&self, number: u64) -> Option<f64> {
        (self.job_difficulty.iter().rev()).find_map(|&(n, d)| (n == number).then_some(d))
    }

    fn rate_limited(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.last_refill).as_secs_f64() * MESSAGES_PER_SEC;
        self.tokens = (self.tokens + refill).min(2.0 * MESSAGES_PER_SEC);
        self.last_refill = now;
        self.tokens -= 1.0;
        self.tokens < 0.0
    }

    pub(super) fn handle(&mut self, line: &[u8], shared: &Arc<Shared>) -> Outcome {
        let mut out = Outcome {
            replies: Vec::new(),
            close: None,
            send_job: false,
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            return out;
        }
        if self.rate_limited() {
            out.replies
                .push(Response::error(Id::Null, codes::OTHER, "Too many messages"));
            out.close = Some("message flood".into());
            return out;
        }
        let was_ready = self.ready();
        let reply = match Message::parse(line) {
            Ok(Message::Request { id, method }) => self.request(id, method, shared),
            // A reply from the miner: nothing to answer.
            Ok(Message::Response(_)) => return out,
            Err(ParseError::Params { id, method, reason }) => {
                tracing::debug!(%method, %reason, "malformed request");
                self.malformed(id, &method, shared)
            }
            Err(_) => {
                self.bad_lines += 1;
                out.replies
                    .push(Response::error(Id::Null, codes::OTHER, "Parse error"));
                if self.bad_lines > MAX_BAD_LINES {
                    out.close = Some("too many unparseable lines".into());
                }
                return out;
            }
        };
        out.replies.push(reply);
        out.send_job = self.ready() && (!was_ready || self.difficulty_pending);
        out
    }

    fn request(&mut self, id: Id, method: Method, shared: &Arc<Shared>) -> Response {
        match method {
            Method::Subscribe { .. } => {
                self.subscribed = true;
                let subscribed = Subscribed {
                    subscriptions: json!([["mining.set_difficulty", "1"], ["mining.notify", "1"]]),
                    extranonce1: hex::encode(self.extranonce1),
                    extranonce2_size: EXTRANONCE2_SIZE as u64,
                };
                Response::ok(id, subscribed.to_result())
            }
            Method::Authorize { worker, .. } if worker.len() > MAX_WORKER_NAME => {
                Response::error(id, codes::UNAUTHORIZED, "Worker name too long")
            }
            Method::Authorize { worker, .. }
                if self.workers.len() >= MAX_WORKERS && !self.workers.contains(&worker) =>
            {
                Response::error(
                    id,
                    codes::UNAUTHORIZED,
                    "Too many workers on one connection",
                )
            }
            Method::Authorize { worker, .. } if !worker.is_empty() => {
                self.workers.insert(worker);
                Response::ok(id, json!(true))
            }
            Method::Authorize { .. } => {
                Response::error(id, codes::UNAUTHORIZED, "Unauthorized worker")
            }
            Method::Configure {
                extensions,
                options,
            } => self.configure(id, &extensions, &options, shared.cfg.version_rolling_mask),
            Method::SuggestDifficulty(d) if d.is_finite() && d > 0.0 => {
                let cfg = &shared.cfg.vardiff;
                self.difficulty = d.clamp(cfg.min, cfg.max);
                self.difficulty_pending = true;
                Response::ok(id, json!(true))
            }
            Method::SuggestDifficulty(_) => Response::error(id, codes::OTHER, "Invalid difficulty"),
            Method::ExtranonceSubscribe => Response::ok(id, json!(true)),
            Method::Submit(submit) => self.submit(&id, Some(submit), shared),
            _ => Response::error(id, codes::OTHER, "Unknown method"),
        }
    }

    /// The answer to a request whose params do not read: what a request with those
    /// params missing gets.
    fn malformed(&mut self, id: Id, method: &str, shared: &Arc<Shared>) -> Response {
        match method {
            "mining.authorize" => Response::error(id, codes::UNAUTHORIZED, "Unauthorized worker"),
            "mining.suggest_difficulty" => Response::error(id, codes::OTHER, "Invalid difficulty"),
            "mining.submit" => self.submit(&id, None, shared),
            _ => Response::error(id, codes::OTHER, "Invalid params"),
        }
    }

    /// BIP310: the miner may roll the bits of its mask that the pool allows.
    fn configure(
        &mut self,
        id: Id,
        extensions: &[String],
        options: &Map<String, Value>,
        pool_mask: u32,
    ) -> Response {
        let mut result = Map::new();
        if extensions.iter().any(|e| e == "version-rolling") {
            let miner_mask = options
                .get("version-rolling.mask")
                .and_then(Value::as_str)
                .and_then(|m| u32::from_str_radix(m, 16).ok())
                .unwrap_or(u32::MAX);
            self.version_mask = miner_mask & pool_mask;
            result.insert("version-rolling".into(), json!(true));
            result.insert(
                "version-rolling.mask".into(),
                json!(format!("{:08x}", self.version_mask)),
            );
        }
        for other in extensions.iter().filter(|e| *e != "version-rolling") {
            result.insert(other.clone(), json!(false));
        }
        Response::ok(id, Value::Object(result))
    }

    /// The merkle root of `job` with `extranonce2`: the last one again when a miner's
    /// shares keep to one job and extranonce2, as most do.
    fn merkle_root(
        &mut self,
        job_id: &str,
        job: &crate::job::Job,
        extranonce2: &[u8],
    ) -> bitcoin::TxMerkleNode {
        let en2 = u64::from_be_bytes(extranonce2.try_into().expect("8 bytes"));
        match &self.last_root {
            Some((id, en, root)) if id == job_id && *en == en2 => *root,
            _ => {
                let root = job.merkle_root(&self.extranonce1, extranonce2);
                self.last_root = Some((job_id.to_string(), en2, root));
                root
            }
        }
    }

    /// Judges a share; `None` is a submit whose params do not read.
    fn submit(&mut self, id: &Id, submit: Option<Submit>, shared: &Arc<Shared>) -> Response {
        let (worker, job_id) = (submit.as_ref())
            .map(|s| (s.worker.clone(), s.job_id.clone()))
            .unwrap_or_default();
        let judged = |verdict: ShareVerdict,
                      block_hash: Option<String>,
                      reason: Option<&str>,
                      difficulty: Option<f64>| {
            shared.recorder.record(Event::ShareJudged {
                worker: worker.clone(),
                job_id: job_id.clone(),
                verdict,
                block_hash,
                reason: reason.map(str::to_string),
                difficulty,
            });
        };
        let reject = |verdict: ShareVerdict, code: i64, message: &str| {
            judged(verdict, None, Some(message), None);
            Response::error(id.clone(), code, message)
        };
        if !self.subscribed {
            return reject(
                ShareVerdict::Invalid,
                codes::NOT_SUBSCRIBED,
                "Not subscribed",
            );
        }
        let Some(submit) = submit else {
            return reject(ShareVerdict::Invalid, codes::OTHER, "Malformed share");
        };
        if !self.workers.contains(&worker) {
            return reject(
                ShareVerdict::Invalid,
                codes::UNAUTHORIZED,
                "Unauthorized worker",
            );
        }
        let hex_u32 = |s: &str| {
            (s.len() == 8)
                .then(|| u32::from_str_radix(s, 16).ok())
                .flatten()
        };
        let extranonce2 = hex::decode(&submit.extranonce2)
            .ok()
            .filter(|b| b.len() == EXTRANONCE2_SIZE);
        let (Some(extranonce2), Some(ntime), Some(nonce)) =
            (extranonce2, hex_u32(&submit.ntime), hex_u32(&submit.nonce))
        else {
            return reject(ShareVerdict::Invalid, codes::OTHER, "Malformed share");
        };
        let job = match shared.job(&job_id) {
            JobState::Current(job) => job,
            JobState::Stale => {
                return reject(ShareVerdict::Stale, codes::JOB_NOT_FOUND, "Stale job")
            }
            JobState::Unknown => {
                return reject(
                    ShareVerdict::UnknownJob,
                    codes::JOB_NOT_FOUND,
                    "Job not found",
                )
            }
        };
        if ntime < job.job.ntime || ntime > job.job.ntime + 7200 {
            return reject(ShareVerdict::Invalid, codes::OTHER, "ntime out of range");
        }
        let version = match rolled_version(
            job.job.version,
            submit.version_bits.as_deref(),
            self.version_mask,
        ) {
            Ok(version) => version,
            Err(problem) => return reject(ShareVerdict::Invalid, codes::OTHER, problem),
        };
        let en2 = u64::from_be_bytes(extranonce2.clone().try_into().expect("8 bytes"));
        if !self
            .seen
            .insert((job_id.clone(), en2, ntime, nonce, version))
        {
            return reject(ShareVerdict::Duplicate, codes::DUPLICATE, "Duplicate share");
        }
        let merkle_root = self.merkle_root(&job_id, &job.job, &extranonce2);
        let header = job.job.header_on(merkle_root, ntime, nonce, version);
        let hash = header.block_hash();
        let required = self
            .sent_under(job.number)
            .unwrap_or(self.difficulty)
            .min(self.difficulty);
        if !mining::target_from_difficulty(required).is_met_by(hash) {
            return reject(
                ShareVerdict::LowDifficulty,
                codes::LOW_DIFFICULTY,
                "Low difficulty share",
            );
        }
        let is_block = Target::from_compact(job.job.bits).is_met_by(hash);
        judged(
            ShareVerdict::Accepted,
            is_block.then(|| hash.to_string()),
            None,
            Some(required),
        );
        if is_block {
            let coinbase = job.job.coinbase(&self.extranonce1, &extranonce2);
            submit_block(shared.clone(), job.clone(), header, coinbase);
        }
        if let Some(next) = self
            .vardiff
            .on_share(Instant::now(), required, self.difficulty)
        {
            tracing::debug!(from = self.difficulty, to = next, "vardiff retarget");
            self.difficulty = next;
            self.difficulty_pending = true;
        }
        Response::ok(id.clone(), json!(true))
    }
}

/// The header version a share rolled to: the job's, with the bits the miner sent (field
/// 5 of `mining.submit`, hex) in place of the mask's; an error says what is wrong with them.
fn rolled_version(job_version: i32, bits: Option<&str>, mask: u32) -> Result<i32, &'static str> {
    let Some(bits) = bits else {
        return Ok(job_version);
    };
    let bits = u32::from_str_radix(bits, 16).map_err(|_| "Malformed version bits")?;
    if bits & !mask != 0 {
        return Err("Version bits outside the mask");
    }
    Ok(((job_version as u32 & !mask) | bits) as i32)
}

/// Sends a solved block to the node without holding up the miner's reply.
fn submit_block(
    shared: Arc<Shared>,
    job: Arc<PoolJob>,
    header: bitcoin::block::Header,
    coinbase: Vec<u8>,
) {
    tokio::spawn(async move {
        let hash = header.block_hash();
        let hex = match job.template.block_hex(&header, &coinbase) {
            Ok(h) => h,
            Err(e) => {
                tracing::error!(%hash, error = %e, "cannot assemble the found block");
                return;
            }
        };
        match shared.rpc.call::<Value>("submitblock", json!([hex])).await {
            Ok(Value::Null) => tracing::info!(%hash, "block accepted by the node"),
            Ok(reason) => tracing::warn!(%hash, %reason, "block rejected by the node"),
            Err(e) => tracing::error!(%hash, error = %e, "submitblock failed"),
        }
    });
}
