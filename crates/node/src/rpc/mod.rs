//! bitcoind-compatible JSON-RPC over HTTP.
//!
//! Behaves as bitcoind's HTTP server does, because pools are written against it: basic
//! auth (401 with an empty body), JSON-RPC 1.0 replies with `result`/`error`/`id` and
//! HTTP 500/404/400 for errors (2.0 requests get 2.0 replies with 200), batches, a
//! 32 MiB body limit (413), and a newline after every reply.

mod methods;
mod params;

use crate::shared::Shared;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use base64::Engine;
use serde_json::{json, Value};
use std::sync::Arc;

/// bitcoind's limit on an HTTP body.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

// bitcoind's RPC error codes (src/rpc/protocol.h).
pub const RPC_MISC_ERROR: i32 = -1;
pub const RPC_TYPE_ERROR: i32 = -3;
pub const RPC_INVALID_ADDRESS_OR_KEY: i32 = -5;
pub const RPC_INVALID_PARAMETER: i32 = -8;
pub const RPC_DESERIALIZATION_ERROR: i32 = -22;
pub const RPC_INVALID_REQUEST: i32 = -32600;
pub const RPC_METHOD_NOT_FOUND: i32 = -32601;
pub const RPC_PARSE_ERROR: i32 = -32700;

/// An RPC error as bitcoind reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i32,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
        }
    }

    /// The HTTP status bitcoind sends with this error on a JSON-RPC 1.0 request.
    fn http_status(&self) -> StatusCode {
        match self.code {
            RPC_INVALID_REQUEST => StatusCode::BAD_REQUEST,
            RPC_METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// A method's result: a JSON value, or JSON text already rendered (large templates).
pub enum Reply {
    Json(Value),
    Raw(String),
}

pub fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(handle).with_state(shared)
}

/// One HTTP request. The credentials are checked before the body is read: a client that
/// has none cannot make the node hold 32 MiB for it.
pub(crate) async fn handle(
    State(shared): State<Arc<Shared>>,
    method: axum::http::Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Some(client) = authorized(&headers, &shared) else {
        tracing::warn!("RPC request with wrong or missing credentials");
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Basic realm=\"jsonrpc\"")],
        )
            .into_response();
    };
    if method != axum::http::Method::POST {
        return (
            StatusCode::METHOD_NOT_ALLOWED,
            "JSONRPC server handles only POST requests\n",
        )
            .into_response();
    }
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            tracing::debug!(error = %e, "RPC body is not JSON");
            return error_reply(Value::Null, RpcError::new(RPC_PARSE_ERROR, "Parse error"));
        }
    };
    match request {
        Value::Object(_) => {
            let id = request.get("id").cloned().unwrap_or(Value::Null);
            let v2 = request.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
            let outcome = call(&shared, &client, &request).await;
            match (outcome, v2) {
                (Ok(result), false) => json_response(StatusCode::OK, envelope_ok(result, &id)),
                (Ok(result), true) => json_response(StatusCode::OK, envelope_ok_v2(result, &id)),
                (Err(e), false) => error_reply(id, e),
                (Err(e), true) => json_response(StatusCode::OK, envelope_err_v2(&e, &id)),
            }
        }
        Value::Array(requests) => {
            // A batch: every element answered in order, always with HTTP 200.
            let mut parts = Vec::with_capacity(requests.len());
            for r in &requests {
                let id = r.get("id").cloned().unwrap_or(Value::Null);
                parts.push(match call(&shared, &client, r).await {
                    Ok(result) => envelope_ok(result, &id),
                    Err(e) => envelope_err(&e, &id),
                });
            }
            json_response(StatusCode::OK, format!("[{}]", parts.join(",")))
        }
        _ => error_reply(
            Value::Null,
            RpcError::new(RPC_PARSE_ERROR, "Top-level object parse error"),
        ),
    }
}

/// Validates one request object and runs its method.
async fn call(shared: &Arc<Shared>, client: &str, request: &Value) -> Result<Reply, RpcError> {
    let Some(obj) = request.as_object() else {
        return Err(RpcError::new(RPC_INVALID_REQUEST, "Invalid Request object"));
    };
    let method = match obj.get("method") {
        None => return Err(RpcError::new(RPC_INVALID_REQUEST, "Missing method")),
        Some(Value::String(m)) => m.as_str(),
        Some(_) => {
            return Err(RpcError::new(
                RPC_INVALID_REQUEST,
                "Method must be a string",
            ))
        }
    };
    let params = match obj.get("params") {
        None | Some(Value::Null) => Value::Array(Vec::new()),
        Some(p @ (Value::Array(_) | Value::Object(_))) => p.clone(),
        Some(_) => {
            return Err(RpcError::new(
                RPC_INVALID_REQUEST,
                "Params must be an array or object",
            ))
        }
    };
    let result = methods::dispatch(shared, client, method, params).await;
    match &result {
        // A pool asking for what bitcoind serves and we do not is a finding: say it.
        Err(e) if e.code == RPC_METHOD_NOT_FOUND => {
            tracing::warn!(
                method,
                "a client called an RPC method this node does not serve"
            )
        }
        Err(e) => tracing::debug!(method, code = e.code, message = %e.message, "RPC error"),
        Ok(_) => {}
    }
    result
}

/// The client a request authenticates as: the node's user, or `<user>.<name>` with the
/// same password (one name per pool, so each gets its own getblocktemplate cache, as from
/// a bitcoind of its own). `None` when the credentials are wrong or missing.
fn authorized(headers: &HeaderMap, shared: &Shared) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let encoded = value.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let (user, password) = std::str::from_utf8(&decoded).ok()?.split_once(':')?;
    let user_ok = user == shared.user
        || user
            .strip_prefix(shared.user.as_str())
            .and_then(|rest| rest.strip_prefix('.'))
            .is_some_and(|name| !name.is_empty());
    (user_ok && constant_time_eq(password.as_bytes(), shared.password.as_bytes()))
        .then(|| user.to_string())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn result_text(result: Reply) -> String {
    match result {
        Reply::Json(v) => v.to_string(),
        Reply::Raw(s) => s,
    }
}

fn envelope_ok(result: Reply, id: &Value) -> String {
    format!(
        r#"{{"result":{},"error":null,"id":{}}}"#,
        result_text(result),
        id
    )
}

fn envelope_ok_v2(result: Reply, id: &Value) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","result":{},"id":{}}}"#,
        result_text(result),
        id
    )
}

fn error_object(e: &RpcError) -> Value {
    json!({"code": e.code, "message": e.message})
}

fn envelope_err(e: &RpcError, id: &Value) -> String {
    json!({"result": null, "error": error_object(e), "id": id}).to_string()
}

fn envelope_err_v2(e: &RpcError, id: &Value) -> String {
    json!({"jsonrpc": "2.0", "error": error_object(e), "id": id}).to_string()
}

fn error_reply(id: Value, e: RpcError) -> Response {
    json_response(e.http_status(), envelope_err(&e, &id))
}

fn json_response(status: StatusCode, mut body: String) -> Response {
    body.push('\n');
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
