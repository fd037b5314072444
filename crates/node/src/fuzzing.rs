//! Entry points for the fuzz targets (`fuzz/` at the repository root) and for the replay of
//! their seeds in `make test` (crates/cli/tests/fuzz_corpus.rs). Each feeds arbitrary bytes to one of the node's
//! faces the way a connection does, and must return without panicking whatever they are.

use crate::shared::Shared;
use crate::state::NodeState;
use crate::tdp::{decode_inbound, submit_solution, Inbound};
use crate::NodeConfig;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method};
use base64::Engine;
use probe::fuzzing::runtime;
use probe::Recorder;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use stratum_apps::stratum_core::codec_sv2::SerializedFrame;

const USER: &str = "fuzz";
const PASSWORD: &str = "fuzz";
/// Longer than any answer takes; what waits longer (a longpoll, `waitfornewblock`) is cut
/// off here, as a client that gives up would.
const ANSWER_WITHIN: Duration = Duration::from_millis(200);

/// One node for every input: its chain moves on as inputs submit blocks, as a live one's
/// does.
fn node() -> &'static Arc<Shared> {
    static NODE: OnceLock<Arc<Shared>> = OnceLock::new();
    NODE.get_or_init(|| {
        let config = NodeConfig {
            // Small, so each input's template is quick to build.
            mempool: crate::MempoolConfig::preset(crate::MempoolPreset::Testnet),
            ..NodeConfig::default()
        };
        let state = NodeState::new(config, Recorder::disabled(), 1_760_000_000)
            .expect("the default network builds");
        Arc::new(Shared::new(state, USER.into(), PASSWORD.into()))
    })
}

/// One HTTP POST to the JSON-RPC face, with the node's credentials, carrying `body`.
pub fn rpc_request(body: &[u8]) {
    let mut headers = HeaderMap::new();
    let credentials =
        base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    headers.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Basic {credentials}")).expect("ASCII"),
    );
    let body = axum::body::Body::from(body.to_vec());
    runtime().block_on(async {
        let answer = crate::rpc::handle(State(node().clone()), Method::POST, headers, body);
        let _ = tokio::time::timeout(ANSWER_WITHIN, answer).await;
    });
}

/// `block` sent with `submitblock`, as a pool sends what its miners found.
pub fn submitted_block(block: &[u8]) {
    let request = serde_json::json!({
        "id": 1,
        "method": "submitblock",
        "params": [hex::encode(block)],
    });
    rpc_request(request.to_string().as_bytes());
}

/// One frame, already decrypted, from a Template Distribution client; a solution is judged.
pub fn tdp_frame(frame: &[u8]) {
    // The frame's buffer is a Vec or a pooled slice, as codec_sv2's features say.
    #[allow(clippy::useless_conversion)]
    let Ok(frame) = SerializedFrame::from_bytes(frame.to_vec().into()) else {
        return;
    };
    if let Ok(Inbound::Solution(solution)) = decode_inbound(frame) {
        let shared = node();
        let template = shared.build_template("tdp fuzz");
        submit_solution(shared, &template, solution);
    }
}

/// A Mining IPC client whose bytes (Cap'n Proto RPC messages) are `data`. Inputs holding
/// a `Return` are left out: capnp-rpc 0.25 panics on one for a question never asked
/// (fixed upstream in 0.27, which bitcoin-capnp-types 0.3.0 does not allow yet), and the
/// fuzzer would stop there every run. The node survives it (its IPC face loses only that
/// connection: `tests/ipc_face.rs`), and our server asks no questions, so no valid input
/// is lost.
pub fn ipc_connection(data: &[u8]) {
    if holds_a_return(data) {
        return;
    }
    let data = data.to_vec();
    let local = tokio::task::LocalSet::new();
    local.block_on(runtime(), async {
        let rpc = crate::ipc::serve_connection(
            node(),
            crate::ipc::MiningInterface::V32,
            std::io::Cursor::new(data),
            tokio::io::sink(),
            "ipc fuzz".into(),
        );
        let _ = tokio::time::timeout(ANSWER_WITHIN, rpc).await;
    });
}

fn holds_a_return(mut data: &[u8]) -> bool {
    use bitcoin_capnp_types::capnp::message::ReaderOptions;
    use bitcoin_capnp_types::capnp::serialize::read_message;
    use bitcoin_capnp_types::capnp_rpc::rpc_capnp::message;
    while let Ok(m) = read_message(&mut data, ReaderOptions::new()) {
        let which = m.get_root::<message::Reader>().map(|r| r.which());
        if matches!(which, Ok(Ok(message::Return(_)))) {
            return true;
        }
    }
    false
}
