//! Stratum V1 on the wire: newline-delimited JSON-RPC, typed once for every SV1 role of
//! ours (the pool, the miner fleet, the tap, the link's attacker), so a line is read into
//! a [`Message`] in one place and written back from one in one place.
//!
//! Fields are kept as the wire has them (hex stays text, ids and answers' results stay
//! JSON): a relay that re-writes one field leaves the others' text as it came, and what a
//! field means (a block hash, a target) is the job of whoever uses it. What a line is
//! written as is what real miners and pools expect: `{"id","method","params"}` for a
//! request or notification, `{"id","result","error"}` for an answer, compact, in that
//! order.

use serde_json::{json, Map, Number, Value};
use std::fmt;

/// SV1 error codes, as cgminer-era pools send them.
pub mod codes {
    pub const OTHER: i64 = 20;
    pub const JOB_NOT_FOUND: i64 = 21;
    pub const DUPLICATE: i64 = 22;
    pub const LOW_DIFFICULTY: i64 = 23;
    pub const UNAUTHORIZED: i64 = 24;
    pub const NOT_SUBSCRIBED: i64 = 25;
}

/// A request's id, which its answer carries back; a notification's is `null`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Id {
    Null,
    Number(Number),
    Text(String),
}

impl Id {
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Id::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    fn from_value(value: Value) -> Result<Id, ParseError> {
        match value {
            Value::Null => Ok(Id::Null),
            Value::Number(n) => Ok(Id::Number(n)),
            Value::String(s) => Ok(Id::Text(s)),
            other => Err(ParseError::Id(other)),
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Id::Null => Value::Null,
            Id::Number(n) => Value::Number(n.clone()),
            Id::Text(s) => Value::String(s.clone()),
        }
    }
}

impl From<u64> for Id {
    fn from(n: u64) -> Id {
        Id::Number(n.into())
    }
}

impl From<&str> for Id {
    fn from(text: &str) -> Id {
        Id::Text(text.to_string())
    }
}

/// The id as JSON text: `7`, `"a"`, `null`.
impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_value().fmt(f)
    }
}

/// One line of SV1.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A call: a miner's request, or a pool's notification (whose id is `null`).
    Request { id: Id, method: Method },
    /// The answer to a request, matched to it by id.
    Response(Response),
}

/// A call and its params, by method.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    /// `mining.subscribe`; a session id to resume, when a miner sends one, is not used.
    Subscribe {
        user_agent: Option<String>,
    },
    Authorize {
        worker: String,
        password: Option<String>,
    },
    /// `mining.configure` (BIP310): the extensions asked for, and their parameters.
    Configure {
        extensions: Vec<String>,
        options: Map<String, Value>,
    },
    ExtranonceSubscribe,
    SuggestDifficulty(f64),
    Submit(Submit),
    Notify(Notify),
    SetDifficulty(f64),
    /// Any other method, its params as they came: a pool answers it, a relay passes it on.
    Other {
        method: String,
        params: Value,
    },
}

/// `mining.submit`'s params; the hex ones are checked by the pool that judges the share
/// (a malformed one is a rejected share, not an unreadable line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submit {
    pub worker: String,
    pub job_id: String,
    pub extranonce2: String,
    pub ntime: String,
    pub nonce: String,
    /// The rolled version bits (BIP310), when the miner rolls them.
    pub version_bits: Option<String>,
}

/// `mining.notify`'s params, hex as the pool wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notify {
    pub job_id: String,
    /// The previous block's hash, each 4-byte word reversed.
    pub prev_hash: String,
    /// Coinbase before the extranonces, and after them.
    pub coinb1: String,
    pub coinb2: String,
    pub merkle_branch: Vec<String>,
    pub version: String,
    pub nbits: String,
    pub ntime: String,
    pub clean_jobs: bool,
}

/// An answer. Its result's shape depends on the request it answers, which only the
/// requester knows, so the result stays JSON (read with [`Response::subscribed`] and
/// [`Response::accepted`]); the error too, as pools word it in several shapes (read with
/// [`Response::rejection`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub id: Id,
    pub result: Value,
    pub error: Value,
}

/// The answer to `mining.subscribe`.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscribed {
    /// What the pool subscribed the miner to; pools shape it differently and no miner
    /// of ours reads it.
    pub subscriptions: Value,
    pub extranonce1: String,
    pub extranonce2_size: u64,
}

/// A refusal's code and text, from whichever shape the pool gave it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rejection {
    pub code: Option<i64>,
    pub message: Option<String>,
}

/// Why a line is not an SV1 message.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("not a JSON object")]
    NotObject,
    #[error("id {0} is not a number, a string or null")]
    Id(Value),
    #[error("method {0} is not a string")]
    Method(Value),
    /// A known method whose params do not read: the id is kept, so it can be answered.
    #[error("{method}: {reason}")]
    Params {
        id: Id,
        method: String,
        reason: String,
    },
}

impl Message {
    /// Reads one line (without or with its newline).
    pub fn parse(line: &[u8]) -> Result<Message, ParseError> {
        let Value::Object(mut fields) = serde_json::from_slice(line)? else {
            return Err(ParseError::NotObject);
        };
        let id = Id::from_value(fields.remove("id").unwrap_or(Value::Null))?;
        let method = match fields.remove("method") {
            // Some JSON-RPC libraries write every field: a null method is an answer.
            None | Some(Value::Null) => {
                let mut take = |key| fields.remove(key).unwrap_or(Value::Null);
                return Ok(Message::Response(Response {
                    id,
                    result: take("result"),
                    error: take("error"),
                }));
            }
            Some(Value::String(method)) => method,
            Some(other) => return Err(ParseError::Method(other)),
        };
        let params = match fields.remove("params") {
            None | Some(Value::Null) => json!([]),
            Some(params) => params,
        };
        let method = Method::parse(&id, method, params)?;
        Ok(Message::Request { id, method })
    }

    /// The message as a line, its newline included.
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(&self.to_value()).expect("JSON values serialise");
        line.push(b'\n');
        line
    }

    fn to_value(&self) -> Value {
        match self {
            Message::Request { id, method } => {
                json!({"id": id.to_value(), "method": method.name(), "params": method.params()})
            }
            Message::Response(r) => r.to_value(),
        }
    }

    /// A pool's notification (id `null`).
    pub fn notification(method: Method) -> Message {
        Message::Request {
            id: Id::Null,
            method,
        }
    }
}

/// The line's JSON, without its newline (for logs).
impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_value().fmt(f)
    }
}

impl Method {
    pub fn name(&self) -> &str {
        match self {
            Method::Subscribe { .. } => "mining.subscribe",
            Method::Authorize { .. } => "mining.authorize",
            Method::Configure { .. } => "mining.configure",
            Method::ExtranonceSubscribe => "mining.extranonce.subscribe",
            Method::SuggestDifficulty(_) => "mining.suggest_difficulty",
            Method::Submit(_) => "mining.submit",
            Method::Notify(_) => "mining.notify",
            Method::SetDifficulty(_) => "mining.set_difficulty",
            Method::Other { method, .. } => method,
        }
    }

    fn params(&self) -> Value {
        match self {
            Method::Subscribe { user_agent } => json!(user_agent.iter().collect::<Vec<_>>()),
            Method::Authorize { worker, password } => {
                json!([worker].into_iter().chain(password).collect::<Vec<_>>())
            }
            Method::Configure {
                extensions,
                options,
            } => json!([extensions, options]),
            Method::ExtranonceSubscribe => json!([]),
            Method::SuggestDifficulty(d) | Method::SetDifficulty(d) => json!([d]),
            Method::Submit(s) => {
                let mut params = vec![&s.worker, &s.job_id, &s.extranonce2, &s.ntime, &s.nonce];
                params.extend(&s.version_bits);
                json!(params)
            }
            Method::Notify(n) => json!([
                n.job_id,
                n.prev_hash,
                n.coinb1,
                n.coinb2,
                n.merkle_branch,
                n.version,
                n.nbits,
                n.ntime,
                n.clean_jobs,
            ]),
            Method::Other { params, .. } => params.clone(),
        }
    }

    fn parse(id: &Id, method: String, params: Value) -> Result<Method, ParseError> {
        let known = matches!(
            method.as_str(),
            "mining.subscribe"
                | "mining.authorize"
                | "mining.configure"
                | "mining.extranonce.subscribe"
                | "mining.suggest_difficulty"
                | "mining.submit"
                | "mining.notify"
                | "mining.set_difficulty"
        );
        if !known {
            return Ok(Method::Other { method, params });
        }
        let p = Params {
            id,
            method: &method,
            params: match &params {
                Value::Array(params) => params,
                _ => return Err(Params::failure(id, &method, "params are not an array")),
            },
        };
        Ok(match method.as_str() {
            "mining.subscribe" => Method::Subscribe {
                user_agent: p.params.first().and_then(Value::as_str).map(str::to_string),
            },
            "mining.authorize" => Method::Authorize {
                worker: p.text(0, "worker")?,
                password: p.optional_text(1, "password")?,
            },
            "mining.configure" => Method::Configure {
                extensions: (p.params.first().and_then(Value::as_array))
                    .ok_or_else(|| p.fail("no list of extensions"))?
                    .iter()
                    .map(|e| e.as_str().map(str::to_string))
                    .collect::<Option<_>>()
                    .ok_or_else(|| p.fail("an extension name is not a string"))?,
                options: match p.params.get(1) {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::Object(options)) => options.clone(),
                    Some(_) => return Err(p.fail("extension parameters are not an object")),
                },
            },
            "mining.extranonce.subscribe" => Method::ExtranonceSubscribe,
            "mining.suggest_difficulty" => Method::SuggestDifficulty(p.number(0, "difficulty")?),
            "mining.set_difficulty" => Method::SetDifficulty(p.number(0, "difficulty")?),
            "mining.submit" => Method::Submit(Submit {
                worker: p.text(0, "worker")?,
                job_id: p.text(1, "job id")?,
                extranonce2: p.text(2, "extranonce2")?,
                ntime: p.text(3, "ntime")?,
                nonce: p.text(4, "nonce")?,
                version_bits: p.optional_text(5, "version bits")?,
            }),
            _ => Method::Notify(p.notify()?),
        })
    }
}

/// A known method's params, read with errors that say which one is wrong.
struct Params<'a> {
    id: &'a Id,
    method: &'a str,
    params: &'a [Value],
}

impl Params<'_> {
    fn failure(id: &Id, method: &str, reason: impl Into<String>) -> ParseError {
        ParseError::Params {
            id: id.clone(),
            method: method.to_string(),
            reason: reason.into(),
        }
    }

    fn fail(&self, reason: impl Into<String>) -> ParseError {
        Params::failure(self.id, self.method, reason)
    }

    fn text(&self, i: usize, what: &str) -> Result<String, ParseError> {
        self.optional_text(i, what)?
            .ok_or_else(|| self.fail(format!("no {what} (param {i})")))
    }

    /// A string param that may be left out (or `null`).
    fn optional_text(&self, i: usize, what: &str) -> Result<Option<String>, ParseError> {
        match self.params.get(i) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.fail(format!("{what} (param {i}) is {other}, not a string"))),
        }
    }

    fn number(&self, i: usize, what: &str) -> Result<f64, ParseError> {
        (self.params.get(i).and_then(Value::as_f64))
            .ok_or_else(|| self.fail(format!("{what} (param {i}) is not a number")))
    }

    fn notify(&self) -> Result<Notify, ParseError> {
        if self.params.len() < 9 {
            return Err(self.fail(format!("{} params, expected 9", self.params.len())));
        }
        let merkle_branch = (self.params[4].as_array())
            .ok_or_else(|| self.fail("merkle branch (param 4) is not an array"))?
            .iter()
            .map(|h| h.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or_else(|| self.fail("a merkle branch entry is not a string"))?;
        Ok(Notify {
            job_id: self.text(0, "job id")?,
            prev_hash: self.text(1, "prev hash")?,
            coinb1: self.text(2, "coinb1")?,
            coinb2: self.text(3, "coinb2")?,
            merkle_branch,
            version: self.text(5, "version")?,
            nbits: self.text(6, "nbits")?,
            ntime: self.text(7, "ntime")?,
            clean_jobs: (self.params[8].as_bool())
                .ok_or_else(|| self.fail("clean_jobs (param 8) is not a boolean"))?,
        })
    }
}

impl Response {
    pub fn ok(id: Id, result: Value) -> Response {
        Response {
            id,
            result,
            error: Value::Null,
        }
    }

    /// A refusal in the usual SV1 shape `[code, message, null]`.
    pub fn error(id: Id, code: i64, message: &str) -> Response {
        Response {
            id,
            result: Value::Null,
            error: json!([code, message, null]),
        }
    }

    fn to_value(&self) -> Value {
        json!({"id": self.id.to_value(), "result": self.result, "error": self.error})
    }

    /// Whether the request was granted outright (`true`), as a share's or an
    /// authorization's is.
    pub fn accepted(&self) -> bool {
        self.result == Value::Bool(true)
    }

    /// The answer read as `mining.subscribe`'s: `None` without an extranonce1 and its size.
    pub fn subscribed(&self) -> Option<Subscribed> {
        Some(Subscribed {
            subscriptions: self.result.get(0)?.clone(),
            extranonce1: self.result.get(1)?.as_str()?.to_string(),
            extranonce2_size: self.result.get(2)?.as_u64()?,
        })
    }

    /// The error's code and text: `[code, message, data]`, `{"code", "message"}`, or a
    /// bare message, as pools send them; `None` without one.
    pub fn rejection(&self) -> Option<Rejection> {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        let code = |v: Option<&Value>| v.and_then(Value::as_i64);
        match &self.error {
            Value::Null => None,
            Value::Array(a) => Some(Rejection {
                code: code(a.first()),
                message: text(a.get(1)),
            }),
            Value::Object(o) => Some(Rejection {
                code: code(o.get("code")),
                message: text(o.get("message")),
            }),
            Value::String(s) => Some(Rejection {
                code: None,
                message: Some(s.clone()),
            }),
            _ => Some(Rejection {
                code: None,
                message: None,
            }),
        }
    }
}

impl From<Response> for Message {
    fn from(response: Response) -> Message {
        Message::Response(response)
    }
}

/// The answer's JSON (for logs).
impl fmt::Display for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_value().fmt(f)
    }
}

impl Subscribed {
    /// The answer's result: `[subscriptions, extranonce1, extranonce2 size]`.
    pub fn to_result(&self) -> Value {
        json!([self.subscriptions, self.extranonce1, self.extranonce2_size])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(message: Message, line: &str) {
        assert_eq!(String::from_utf8(message.to_line()).unwrap(), line);
        assert_eq!(Message::parse(line.as_bytes()).unwrap(), message);
    }

    fn request(id: impl Into<Id>, method: Method) -> Message {
        Message::Request {
            id: id.into(),
            method,
        }
    }

    fn notify() -> Notify {
        Notify {
            job_id: "1f".into(),
            prev_hash: "03020100".repeat(8),
            coinb1: "01020304".into(),
            coinb2: "0506".into(),
            merkle_branch: vec!["09".repeat(32)],
            version: "20000000".into(),
            nbits: "207fffff".into(),
            ntime: "6553f100".into(),
            clean_jobs: true,
        }
    }

    #[test]
    fn each_request_round_trips_as_miners_write_it() {
        round_trip(
            request(
                1,
                Method::Subscribe {
                    user_agent: Some("stratum-bench/0.1".into()),
                },
            ),
            "{\"id\":1,\"method\":\"mining.subscribe\",\"params\":[\"stratum-bench/0.1\"]}\n",
        );
        round_trip(
            request(1, Method::Subscribe { user_agent: None }),
            "{\"id\":1,\"method\":\"mining.subscribe\",\"params\":[]}\n",
        );
        round_trip(
            request(
                2,
                Method::Authorize {
                    worker: "farm.1".into(),
                    password: Some("x".into()),
                },
            ),
            "{\"id\":2,\"method\":\"mining.authorize\",\"params\":[\"farm.1\",\"x\"]}\n",
        );
        round_trip(
            request(3, Method::SuggestDifficulty(512.0)),
            "{\"id\":3,\"method\":\"mining.suggest_difficulty\",\"params\":[512.0]}\n",
        );
        round_trip(
            request(4, Method::ExtranonceSubscribe),
            "{\"id\":4,\"method\":\"mining.extranonce.subscribe\",\"params\":[]}\n",
        );
        let mut options = Map::new();
        options.insert("version-rolling.mask".into(), json!("1fffe000"));
        round_trip(
            request(5, Method::Configure { extensions: vec!["version-rolling".into()], options }),
            "{\"id\":5,\"method\":\"mining.configure\",\"params\":[[\"version-rolling\"],{\"version-rolling.mask\":\"1fffe000\"}]}\n",
        );
        let mut submit = Submit {
            worker: "farm.1".into(),
            job_id: "1f".into(),
            extranonce2: "0000000000000001".into(),
            ntime: "6553f100".into(),
            nonce: "a1b2c3d4".into(),
            version_bits: None,
        };
        round_trip(
            request(100, Method::Submit(submit.clone())),
            "{\"id\":100,\"method\":\"mining.submit\",\"params\":[\"farm.1\",\"1f\",\"0000000000000001\",\"6553f100\",\"a1b2c3d4\"]}\n",
        );
        submit.version_bits = Some("00002000".into());
        round_trip(
            request("attacker-submit", Method::Submit(submit)),
            "{\"id\":\"attacker-submit\",\"method\":\"mining.submit\",\"params\":[\"farm.1\",\"1f\",\"0000000000000001\",\"6553f100\",\"a1b2c3d4\",\"00002000\"]}\n",
        );
        round_trip(
            request(
                6,
                Method::Other {
                    method: "mining.ping".into(),
                    params: json!([1, "a"]),
                },
            ),
            "{\"id\":6,\"method\":\"mining.ping\",\"params\":[1,\"a\"]}\n",
        );
    }

    #[test]
    fn notifications_and_answers_round_trip_as_pools_write_them() {
        let n = notify();
        let branch = "09".repeat(32);
        let prev = "03020100".repeat(8);
        round_trip(
            Message::notification(Method::Notify(n)),
            &format!("{{\"id\":null,\"method\":\"mining.notify\",\"params\":[\"1f\",\"{prev}\",\"01020304\",\"0506\",[\"{branch}\"],\"20000000\",\"207fffff\",\"6553f100\",true]}}\n"),
        );
        round_trip(
            Message::notification(Method::SetDifficulty(0.5)),
            "{\"id\":null,\"method\":\"mining.set_difficulty\",\"params\":[0.5]}\n",
        );
        let subscribed = Subscribed {
            subscriptions: json!([["mining.set_difficulty", "1"], ["mining.notify", "1"]]),
            extranonce1: "0a0b0c0d".into(),
            extranonce2_size: 8,
        };
        let answer = Response::ok(1.into(), subscribed.to_result());
        assert_eq!(answer.subscribed(), Some(subscribed));
        round_trip(
            answer.into(),
            "{\"id\":1,\"result\":[[[\"mining.set_difficulty\",\"1\"],[\"mining.notify\",\"1\"]],\"0a0b0c0d\",8],\"error\":null}\n",
        );
        let accepted = Response::ok(7.into(), json!(true));
        assert!(accepted.accepted());
        assert_eq!(accepted.rejection(), None);
        round_trip(
            accepted.into(),
            "{\"id\":7,\"result\":true,\"error\":null}\n",
        );
        let refused = Response::error(Id::Null, codes::OTHER, "Parse error");
        assert_eq!(
            refused.rejection(),
            Some(Rejection {
                code: Some(20),
                message: Some("Parse error".into())
            })
        );
        round_trip(
            refused.into(),
            "{\"id\":null,\"result\":null,\"error\":[20,\"Parse error\",null]}\n",
        );
    }

    /// A notify as ckpool writes it: params first, spaces after separators, a new block
    /// (`clean_jobs` true).
    #[test]
    fn a_real_pools_notify_reads_field_by_field() {
        let line = br#"{"params": ["64f6a0b20000a5e1", "5b1c2d0b0e1ad1fa1d6cfb0f8b1a2a50f4f3e0ec00023a0a0000000000000000", "01000000010000000000000000000000000000000000000000000000000000000000000000ffffffff35037a510c", "ffffffff0200f2052a01000000160014a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d40000000000000000266a24aa21a9ede2f61c3f71d1defd3fa999dfa36953755c690689799962b48bebd836974e8cf900000000", ["2b2d8d0c0e61a9f8b4f9d8d9d3c1e9d1a1f1b1c1d1e1f10111213141516171819", "9a1e7bdb7c4e3e8f1e2f3a4b5c6d7e8f9a0b1c2d3e4f5061728394a5b6c7d8e9"], "20000000", "17034219", "64f6a0b2", true], "id": null, "method": "mining.notify"}"#;
        let Message::Request {
            id: Id::Null,
            method: Method::Notify(n),
        } = Message::parse(line).unwrap()
        else {
            panic!("not a notify");
        };
        assert_eq!(n.job_id, "64f6a0b20000a5e1");
        assert!(n.prev_hash.starts_with("5b1c2d0b") && n.prev_hash.len() == 64);
        assert!(n.coinb1.ends_with("35037a510c"));
        assert!(n.coinb2.starts_with("ffffffff02") && n.coinb2.ends_with("00000000"));
        assert_eq!(n.merkle_branch.len(), 2);
        assert!(n.merkle_branch[1].starts_with("9a1e7bdb"));
        assert_eq!(
            (n.version.as_str(), n.nbits.as_str()),
            ("20000000", "17034219")
        );
        assert_eq!(n.ntime, "64f6a0b2");
        assert!(n.clean_jobs);
    }

    #[test]
    fn a_line_without_a_method_is_an_answer_whatever_its_error_looks_like() {
        let answer = |line: &str| match Message::parse(line.as_bytes()).unwrap() {
            Message::Response(r) => r,
            other => panic!("{other:?}"),
        };
        let r = answer(
            r#"{"id":3,"result":false,"error":{"code":23,"message":"Low difficulty share"}}"#,
        );
        assert_eq!(r.id.as_u64(), Some(3));
        assert!(!r.accepted());
        assert_eq!(r.rejection().unwrap().code, Some(23));
        let r = answer(r#"{"id":"a","error":"Above target"}"#);
        assert_eq!(r.id.to_string(), "\"a\"");
        assert_eq!(r.result, Value::Null);
        assert_eq!(
            r.rejection().unwrap().message.as_deref(),
            Some("Above target")
        );
        assert_eq!(answer(r#"{"result":true}"#).id, Id::Null);
        // A library that writes every field: a null method is still an answer.
        let r = answer(r#"{"id":4,"method":null,"result":true,"error":null}"#);
        assert!(r.accepted());
    }

    #[test]
    fn malformed_lines_are_refused_saying_why() {
        let why = |line: &str| Message::parse(line.as_bytes()).unwrap_err().to_string();
        assert!(
            why("{\"id\":1,").starts_with("not JSON: "),
            "{}",
            why("{\"id\":1,")
        );
        assert_eq!(why("[1,2]"), "not a JSON object");
        assert_eq!(
            why(r#"{"id":true,"method":"mining.subscribe"}"#),
            "id true is not a number, a string or null"
        );
        assert_eq!(why(r#"{"id":1,"method":5}"#), "method 5 is not a string");
        assert_eq!(
            why(r#"{"id":2,"method":"mining.authorize","params":[]}"#),
            "mining.authorize: no worker (param 0)"
        );
        assert_eq!(
            why(r#"{"id":2,"method":"mining.submit","params":["w","j","00",1700000000,"00"]}"#),
            "mining.submit: ntime (param 3) is 1700000000, not a string"
        );
        assert_eq!(
            why(r#"{"id":null,"method":"mining.notify","params":["x"]}"#),
            "mining.notify: 1 params, expected 9"
        );
        assert_eq!(
            why(r#"{"id":null,"method":"mining.set_difficulty","params":["big"]}"#),
            "mining.set_difficulty: difficulty (param 0) is not a number"
        );
        assert_eq!(
            why(r#"{"id":1,"method":"mining.submit","params":{"worker":"w"}}"#),
            "mining.submit: params are not an array"
        );
        // The id of a request whose params do not read is kept, to answer it.
        let Err(ParseError::Params { id, .. }) =
            Message::parse(br#"{"id":9,"method":"mining.suggest_difficulty","params":[]}"#)
        else {
            panic!("read");
        };
        assert_eq!(id, Id::from(9));
    }
}
