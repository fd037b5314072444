//! A small async client for bitcoind-compatible JSON-RPC: basic auth or a cookie file,
//! bitcoind's error objects surfaced as [`RpcCallError::Rpc`].

use anyhow::Context;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum RpcCallError {
    #[error("cannot reach the node: {0}")]
    Transport(#[from] reqwest::Error),
    #[error("the node refused the credentials (HTTP 401)")]
    Unauthorized,
    #[error("RPC error {code}: {message}")]
    Rpc { code: i64, message: String },
    #[error("unexpected reply (HTTP {status}): {body}")]
    Malformed { status: u16, body: String },
}

pub struct RpcClient {
    url: String,
    user: String,
    password: String,
    http: reqwest::Client,
    next_id: AtomicU64,
}

impl RpcClient {
    pub fn new(url: &str, user: &str, password: &str) -> Self {
        RpcClient {
            url: url.to_string(),
            user: user.to_string(),
            password: password.to_string(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .tcp_nodelay(true)
                .build()
                .expect("HTTP client builds"),
            next_id: AtomicU64::new(1),
        }
    }

    /// Authenticates with a bitcoind cookie file (`user:password` on one line).
    pub fn from_cookie(url: &str, cookie: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(cookie)
            .with_context(|| format!("cannot read cookie file {}", cookie.display()))?;
        let (user, password) = text.trim().split_once(':').with_context(|| {
            format!("{} is not a cookie file (user:password)", cookie.display())
        })?;
        Ok(Self::new(url, user, password))
    }

    /// Calls `method` and decodes its result.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<T, RpcCallError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "1.0", "id": id, "method": method, "params": params});
        let (status, text) = self.post(body.to_string()).await?;
        let malformed = || RpcCallError::Malformed {
            status,
            body: text.chars().take(500).collect(),
        };
        let reply: Value = serde_json::from_str(&text).map_err(|_| malformed())?;
        if let Some(err) = reply.get("error").filter(|e| !e.is_null()) {
            return Err(RpcCallError::Rpc {
                code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            });
        }
        let result = reply.get("result").cloned().ok_or_else(malformed)?;
        serde_json::from_value(result).map_err(|_| malformed())
    }

    /// Posts a raw body and returns the HTTP status and the reply text as they came.
    pub async fn post(&self, body: String) -> Result<(u16, String), RpcCallError> {
        let reply = self
            .http
            .post(&self.url)
            .basic_auth(&self.user, Some(&self.password))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await?;
        let status = reply.status().as_u16();
        if status == 401 {
            return Err(RpcCallError::Unauthorized);
        }
        Ok((status, reply.text().await?))
    }
}
