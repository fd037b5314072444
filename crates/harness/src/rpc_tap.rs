//! The RPC tap between SV1 pools and a real node: what the simulated node records of
//! itself (templates, submitted blocks, tips), recorded from outside, so a run measures a
//! real, synced bitcoind as it measures ours.
//!
//! A real node marks no template, so a template's identity is what a job built on it
//! shows: its prev hash and merkle branches (`mining::work_id`). The tap passes every RPC
//! request and answer unchanged and records each getblocktemplate answer as the pool got
//! it (stamped when the whole answer had passed) and each submitblock with the node's
//! verdict. Tips come from the node's ZMQ `hashblock`, stamped as the tap receives it:
//! that includes the node's own delay in announcing, which nothing outside it can see.
//! A node without ZMQ (the Core built here) is asked by `waitfornewblock`, which answers
//! when its tip moves: its own announcement, over RPC.

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri};
use bitcoin::consensus::Decodable;
use bitcoin::BlockHash;
use probe::{mono_ns, Event, Recorder, TipCause};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::task::JoinHandle;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RpcTapConfig {
    pub listen: SocketAddr,
    /// The node's RPC, `http://HOST:PORT`.
    pub node_url: String,
    /// The node's credentials, for the tap's own questions about new tips (the pools'
    /// requests pass with their own).
    pub rpc_user: String,
    pub rpc_password: String,
    /// The node's ZMQ endpoint publishing `hashblock`; without one, `waitfornewblock`.
    pub zmq: Option<String>,
    /// The node's Mining IPC, tapped for SV2 pools (`crate::ipc_tap`).
    #[serde(default)]
    pub ipc: Option<crate::ipc_tap::IpcTapConfig>,
}

/// The largest request the tap passes on: a submitblock of the largest block, in hex,
/// with room to spare.
const MAX_REQUEST_BYTES: usize = 32 << 20;

pub struct RpcTap {
    pub listen_addr: SocketAddr,
    /// The IPC tap's socket, when the node's Mining IPC is tapped too.
    pub ipc: Option<crate::ipc_tap::IpcTap>,
    tasks: Vec<JoinHandle<()>>,
}

/// What the proxy shares between requests.
struct Proxy {
    node_url: String,
    http: reqwest::Client,
    recorder: Recorder,
    /// Blocks the pools submitted, noted as the request passes (the node may announce the
    /// block before its answer does): those tips are ours, not the network's.
    submitted: crate::ipc_tap::Submitted,
}

impl RpcTap {
    /// Checks the node's ZMQ, records its current tip, and starts relaying.
    pub async fn start(cfg: RpcTapConfig, recorder: Recorder) -> Result<RpcTap> {
        let node = Arc::new(bitcoind_rpc::RpcClient::new(
            &cfg.node_url,
            &cfg.rpc_user,
            &cfg.rpc_password,
        ));
        let mut hashblock = match &cfg.zmq {
            Some(zmq) => Some(sv1::hashblock::subscribe(zmq).await?),
            None => None,
        };
        let best: BlockHash = node
            .call("getbestblockhash", serde_json::json!([]))
            .await
            .with_context(|| format!("the node at {}", cfg.node_url))?;
        // The tip the run starts on: before it, nothing is known to be outdated.
        record_tip(&node, best, mono_ns(), TipCause::Network, &recorder).await;
        let listener = tokio::net::TcpListener::bind(cfg.listen)
            .await
            .with_context(|| format!("the RPC tap cannot listen on {}", cfg.listen))?;
        let listen_addr = listener.local_addr()?;
        let submitted = crate::ipc_tap::Submitted::default();
        let proxy = Arc::new(Proxy {
            node_url: cfg.node_url.trim_end_matches('/').to_string(),
            // No timeout: a long-polling getblocktemplate waits as long as the node does.
            http: reqwest::Client::builder()
                .tcp_nodelay(true)
                .build()
                .context("HTTP client")?,
            recorder: recorder.clone(),
            submitted: submitted.clone(),
        });
        let app = axum::Router::new()
            .fallback({
                let proxy = proxy.clone();
                move |uri: Uri, headers: HeaderMap, body: Bytes| {
                    let proxy = proxy.clone();
                    async move { proxy.relay(uri, headers, body).await }
                }
            })
            // A block in hex is up to 8 MB (4 million weight units): far over axum's default.
            .layer(axum::extract::DefaultBodyLimit::max(MAX_REQUEST_BYTES));
        let serve = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "the RPC tap stopped serving");
            }
        });
        let ipc_node = node.clone();
        let tips = tokio::spawn(async move {
            let mut current = best;
            loop {
                let next = match &mut hashblock {
                    Some(zmq) => sv1::hashblock::next_block(zmq).await,
                    None => wait_for_new_block(&node, current).await,
                };
                match next {
                    Ok(hash) => {
                        current = hash;
                        let t = mono_ns();
                        let cause = match proxy.submitted.lock().contains(&hash) {
                            true => TipCause::Submitted,
                            false => TipCause::Network,
                        };
                        record_tip(&node, hash, t, cause, &proxy.recorder).await;
                    }
                    Err(e) => {
                        tracing::warn!(error = %format!("{e:#}"), "the node's new tips");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                }
            }
        });
        let ipc = match cfg.ipc {
            Some(ipc) => {
                let (recorder, node) = (recorder.clone(), Some(ipc_node));
                Some(crate::ipc_tap::IpcTap::start(ipc, recorder, submitted, node).await?)
            }
            None => None,
        };
        Ok(RpcTap {
            listen_addr,
            ipc,
            tasks: vec![serve, tips],
        })
    }

    pub fn stop(&self) {
        for task in &self.tasks {
            task.abort();
        }
    }

    /// Waits for what the IPC tap still asks the node (`IpcTap::settle`).
    pub async fn settle(&self) {
        if let Some(ipc) = &self.ipc {
            ipc.settle().await;
        }
    }
}

/// The node's next tip after `current`, as `waitfornewblock` announces it (asked again
/// every 10 s, so a stopped node is noticed).
async fn wait_for_new_block(
    node: &bitcoind_rpc::RpcClient,
    current: BlockHash,
) -> Result<BlockHash> {
    loop {
        let answer: Value = node
            .call(
                "waitfornewblock",
                serde_json::json!([10_000, current.to_string()]),
            )
            .await?;
        let hash: BlockHash = (answer["hash"].as_str().unwrap_or_default())
            .parse()
            .context("waitfornewblock's hash")?;
        if hash != current {
            return Ok(hash);
        }
    }
}

impl Proxy {
    /// Passes one HTTP request to the node and its answer back, unchanged; what they
    /// carried is read off the pool's path.
    async fn relay(
        self: Arc<Self>,
        uri: Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> (StatusCode, HeaderMap, Bytes) {
        // The request is read beside its relay, off the pool's path: a block it submits is
        // noted long before the node, which validates it first, can announce it.
        let request = {
            let (proxy, body) = (self.clone(), body.clone());
            tokio::spawn(async move {
                let request = serde_json::from_slice::<Value>(&body).ok()?;
                proxy.note_submissions(&request);
                Some(request)
            })
        };
        let url = format!(
            "{}{}",
            self.node_url,
            uri.path_and_query().map_or("/", |p| p.as_str())
        );
        let mut relayed = self.http.post(&url).body(body);
        for name in ["authorization", "content-type"] {
            if let Some(value) = headers.get(name) {
                relayed = relayed.header(name, value.as_bytes());
            }
        }
        let answer = async {
            let reply = relayed.send().await?;
            let status = reply.status().as_u16();
            let content_type = reply.headers().get("content-type").cloned();
            let bytes = reply.bytes().await?;
            Ok::<_, reqwest::Error>((status, content_type, bytes))
        };
        match answer.await {
            Ok((status, content_type, answer)) => {
                let t = mono_ns();
                let mut out = HeaderMap::new();
                if let Some(ct) = content_type.and_then(|v| v.to_str().ok()?.parse().ok()) {
                    out.insert("content-type", ct);
                }
                // bitcoind answers an RPC error with HTTP 500.
                if (200..300).contains(&status) || status == 500 {
                    let (proxy, answer) = (self.clone(), answer.clone());
                    tokio::spawn(async move {
                        if let Ok(Some(request)) = request.await {
                            proxy.note(t, &request, &answer);
                        }
                    });
                }
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
                (status, out, answer)
            }
            Err(e) => {
                tracing::warn!(error = %e, "the RPC tap cannot reach the node");
                let text = format!("the RPC tap cannot reach the node: {e}");
                (StatusCode::BAD_GATEWAY, HeaderMap::new(), Bytes::from(text))
            }
        }
    }

    /// Records the templates and block submissions in one exchange (a batch pairs its
    /// requests and answers by id).
    fn note(&self, t: u64, request: &Value, answer: &[u8]) {
        let Ok(answer) = serde_json::from_slice::<Value>(answer) else {
            return;
        };
        let pairs: Vec<(&Value, &Value)> = match (request, &answer) {
            (Value::Array(requests), Value::Array(answers)) => requests
                .iter()
                .filter_map(|q| Some((q, answers.iter().find(|a| a.get("id") == q.get("id"))?)))
                .collect(),
            (q, a) => vec![(q, a)],
        };
        for (request, answer) in pairs {
            let event = match request.get("method").and_then(Value::as_str) {
                Some("getblocktemplate") => template_fetched(answer),
                Some("submitblock") => block_submitted(request, answer),
                _ => None,
            };
            if let Some(event) = event {
                self.recorder.record_at(t, event);
            }
        }
    }

    /// Notes the blocks a request submits, before the node can announce them.
    fn note_submissions(&self, request: &Value) {
        let requests = match request {
            Value::Array(batch) => batch.iter().collect(),
            one => vec![one],
        };
        for r in requests {
            if r.get("method").and_then(Value::as_str) == Some("submitblock") {
                if let Some(header) = submitted_header(r) {
                    self.submitted.lock().insert(header.block_hash());
                }
            }
        }
    }
}

/// A submitblock request with the node's answer.
fn block_submitted(request: &Value, answer: &Value) -> Option<Event> {
    let header = submitted_header(request)?;
    let hash = header.block_hash();
    // bitcoind answers null for a block it took, else the reason in words.
    let reject_reason = match (answer.get("result"), answer.get("error")) {
        (_, Some(e)) if !e.is_null() => Some(
            e.get("message")
                .and_then(Value::as_str)
                .map_or_else(|| e.to_string(), str::to_string),
        ),
        (Some(Value::Null) | None, _) => None,
        (Some(Value::String(reason)), _) => Some(reason.clone()),
        (Some(other), _) => Some(other.to_string()),
    };
    Some(Event::BlockSubmitted {
        hash: hash.to_string(),
        prev_hash: header.prev_blockhash.to_string(),
        height: None,
        template_id: None,
        via: "rpc".into(),
        reject_reason,
    })
}

/// The header of the block a submitblock request carries.
fn submitted_header(request: &Value) -> Option<bitcoin::block::Header> {
    let hex_block = request.get("params")?.get(0)?.as_str()?;
    let bytes = hex::decode(hex_block.get(..160)?).ok()?;
    bitcoin::block::Header::consensus_decode(&mut bytes.as_slice()).ok()
}

/// A getblocktemplate answer as the template the pool got (read as our pool reads one),
/// identified as its jobs show it.
fn template_fetched(answer: &Value) -> Option<Event> {
    let t = sv1::pool::templates::BlockTemplate::from_gbt(answer.get("result")?).ok()?;
    Some(Event::TemplateFetched {
        prev_hash: t.prev_hash.to_string(),
        height: t.height,
        value_sats: t.value,
        tx_count: t.tx_count,
        work_id: mining::work_id(&t.prev_hash, &t.branch),
    })
}

/// Records the node's new tip `hash`, received at `t`, with what the node says of it.
async fn record_tip(
    node: &bitcoind_rpc::RpcClient,
    hash: BlockHash,
    t: u64,
    cause: TipCause,
    recorder: &Recorder,
) {
    #[derive(Deserialize)]
    struct Header {
        height: u32,
        #[serde(rename = "previousblockhash", default)]
        prev_hash: Option<String>,
        #[serde(rename = "nTx")]
        tx_count: usize,
    }
    let header: Option<Header> = match node.call("getblockheader", serde_json::json!([hash])).await
    {
        Ok(h) => Some(h),
        Err(e) => {
            tracing::warn!(%hash, error = %e, "the node did not describe its new tip");
            None
        }
    };
    recorder.record_at(
        t,
        Event::TipChanged {
            height: header.as_ref().map_or(0, |h| h.height),
            hash: hash.to_string(),
            prev_hash: header
                .as_ref()
                .and_then(|h| h.prev_hash.clone())
                .unwrap_or_default(),
            cause,
            tx_count: header.map_or(0, |h| h.tx_count),
            // A real node's fees in a block are not in its header.
            fees_sats: 0,
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_submitted_block_is_named_by_its_header_with_the_nodes_verdict() {
        let genesis = bitcoin::constants::genesis_block(bitcoin::Network::Regtest);
        let hex_block = bitcoin::consensus::encode::serialize_hex(&genesis);
        let request = json!({"method": "submitblock", "params": [hex_block], "id": 7});
        let verdict = |answer: Value| match block_submitted(&request, &answer) {
            Some(Event::BlockSubmitted {
                hash,
                reject_reason,
                ..
            }) => (hash, reject_reason),
            other => panic!("{other:?}"),
        };
        let (hash, accepted) = verdict(json!({"result": null, "error": null, "id": 7}));
        assert_eq!(hash, genesis.block_hash().to_string());
        assert_eq!(accepted, None);
        let (_, duplicate) = verdict(json!({"result": "duplicate", "error": null, "id": 7}));
        assert_eq!(duplicate.as_deref(), Some("duplicate"));
        let (_, error) = verdict(
            json!({"result": null, "error": {"code": -22, "message": "Block decode failed"}, "id": 7}),
        );
        assert_eq!(error.as_deref(), Some("Block decode failed"));
        // Too short to hold a header: nothing recorded.
        let short = json!({"method": "submitblock", "params": ["00ff"], "id": 8});
        assert!(block_submitted(&short, &json!({"result": null})).is_none());
    }

    #[test]
    fn a_template_is_identified_by_its_tip_and_merkle_branches() {
        let prev = "00000000000000000001aa1b3fba6f9c77eb2e0c1e5c2a31a7fcef6d1b1a2a3b";
        let txid = |n: u8| format!("{:064x}", n);
        let answer = |txs: &[u8]| {
            json!({"result": {
                "previousblockhash": prev,
                "height": 870_001,
                "coinbasevalue": 312_600_000u64,
                "bits": "207fffff",
                "curtime": 1_700_000_000,
                "version": 0x2000_0000,
                "transactions": txs.iter().map(|n| json!({"txid": txid(*n), "hash": txid(*n + 100), "data": "00"})).collect::<Vec<_>>(),
            }, "error": null, "id": 1})
        };
        let Some(Event::TemplateFetched {
            work_id,
            tx_count,
            value_sats,
            height,
            ..
        }) = template_fetched(&answer(&[1, 2, 3]))
        else {
            panic!("a template");
        };
        assert_eq!((tx_count, value_sats, height), (3, 312_600_000, 870_001));
        // The work id is what a miner computes from the job: the txids' coinbase branch
        // (not the wtxids'), under the prev hash.
        let txids: Vec<bitcoin::Txid> = [1u8, 2, 3]
            .iter()
            .map(|n| txid(*n).parse().unwrap())
            .collect();
        let branch = mining::coinbase_merkle_branch(&txids);
        assert_eq!(work_id, mining::work_id(&prev.parse().unwrap(), &branch));
        // Another order is other work.
        let Some(Event::TemplateFetched { work_id: other, .. }) =
            template_fetched(&answer(&[2, 1, 3]))
        else {
            panic!("a template");
        };
        assert_ne!(work_id, other);
        // An error answer is no template.
        assert!(template_fetched(&json!({"result": null, "error": {"code": -10}})).is_none());
    }
}
