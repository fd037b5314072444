//! Entry points for the fuzz targets (`fuzz/` at the repository root) and for the replay of
//! their seeds in `make test` (crates/cli/tests/fuzz_corpus.rs). Each feeds arbitrary bytes to a parser the way
//! its role does on a live connection, and must return without panicking whatever the
//! bytes are.

use crate::pool::connection::{serve_connection, Outbound};
use crate::pool::templates::{job_for, BlockTemplate};
use crate::pool::{PoolConfig, Shared, VardiffConfig};
use crate::wire::read_raw_line;
use crate::{fleet, tap};
use bitcoind_rpc::RpcClient;
use mining::hashing::Work as _;
use probe::fuzzing::runtime;
use probe::Recorder;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::BufReader;

/// Splits `data` into lines as a role's reader does (bounded, newline kept), and gives each
/// to `each` until the reader refuses the rest.
fn for_each_line(data: &[u8], mut each: impl FnMut(&[u8])) {
    runtime().block_on(async {
        let mut reader = BufReader::new(data);
        let mut line = Vec::new();
        while read_raw_line(&mut reader, &mut line).await.is_ok() {
            each(&line);
            line.clear();
        }
    })
}

/// A getblocktemplate reply like the node's: two transactions, so jobs carry a merkle
/// branch; bits no fuzzed share can meet, so no input reaches `submitblock`.
fn template_reply() -> Value {
    json!({
        "previousblockhash": "000000000000000000021a9b1c1c0d5e0fd4dfa0e8e4ba1fdf2d06b8ac1a0fb2",
        "height": 900_000,
        "coinbasevalue": 312_500_000u64,
        "bits": "17025105",
        "curtime": 1_760_000_000u32,
        "version": 0x2000_0000,
        "transactions": [
            {"data": "00", "txid": "1111111111111111111111111111111111111111111111111111111111111111"},
            {"data": "00", "txid": "2222222222222222222222222222222222222222222222222222222222222222"},
        ],
        "default_witness_commitment": "6a24aa21a9ed0000000000000000000000000000000000000000000000000000000000000000",
    })
}

fn pool_config() -> PoolConfig {
    PoolConfig {
        listen: "127.0.0.1:0".parse().expect("an address"),
        rpc_url: "http://127.0.0.1:9".into(),
        rpc_user: "fuzz".into(),
        rpc_password: "fuzz".into(),
        zmq: None,
        payout_script: bitcoin::ScriptBuf::new_op_return([0u8; 4]),
        coinbase_tag: "/fuzz/".into(),
        job_refresh: Duration::from_secs(30),
        refresh_fee_threshold_sats: 0,
        // Easy shares, so fuzzed submits can be accepted and move the difficulty.
        vardiff: VardiffConfig {
            shares_per_min: 6.0,
            start: 1e-9,
            min: 1e-12,
            max: 1e12,
            retarget: Duration::from_secs(1),
        },
        version_rolling_mask: 0x1fff_e000,
        broadcast: None,
    }
}

/// The built-in pool serving one miner connection whose bytes are `data`.
pub fn pool_connection(data: &[u8]) {
    let cfg = pool_config();
    let template = BlockTemplate::from_gbt(&template_reply()).expect("the fixed template reads");
    let job = job_for(&cfg, template, 1, true, "fuzz", &Recorder::disabled());
    let rpc = RpcClient::new(&cfg.rpc_url, &cfg.rpc_user, &cfg.rpc_password);
    runtime().block_on(async {
        let shared = Shared::new(cfg, rpc, None, Recorder::disabled(), job);
        let peer = "127.0.0.1:1".parse().expect("an address");
        serve_connection(data, Discard, peer, shared).await;
    });
}

/// A miner that reads everything at once: the pool's replies go nowhere.
struct Discard;

impl Outbound for Discard {
    fn try_write(&self, bytes: &[u8]) -> std::io::Result<usize> {
        Ok(bytes.len())
    }

    async fn writable(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The pool reading a getblocktemplate reply (from any bitcoind-compatible node) and making
/// a job of it.
pub fn pool_template(data: &[u8]) {
    let Ok(reply) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if let Ok(template) = BlockTemplate::from_gbt(&reply) {
        let job = job_for(
            &pool_config(),
            template,
            1,
            true,
            "fuzz",
            &Recorder::disabled(),
        );
        let header = job
            .job
            .header(&[0; 4], &[0; 8], job.job.ntime, 0, job.job.version);
        let coinbase = job.job.coinbase(&[0; 4], &[0; 8]);
        let _ = job.template.block_hex(&header, &coinbase);
    }
}

/// One of our miners reading lines from a pool, and hashing on whatever job they gave it.
pub fn miner_connection(data: &[u8]) {
    let mut miner = fleet::MinerState::new(0);
    let (slot, _shares) = fleet::Slot::new();
    let recorder = Recorder::disabled();
    for_each_line(data, |line| {
        miner.handle(line, probe::mono_ns(), &slot, &recorder);
        let mut found = Vec::new();
        slot.with(|work| work.hash(64, &mut found));
    });
}

/// The SV1 tap reading both directions of a connection: each line's first byte says which
/// (even: miner to pool, odd: pool to miner), the rest is the line.
pub fn tap_connection(data: &[u8]) {
    let conn = parking_lot::Mutex::new(tap::Connection::default());
    let recorder = Recorder::disabled();
    let stats = tap::Sv1TapStats::default();
    for_each_line(data, |line| {
        let Some((direction, line)) = line.split_first() else {
            return;
        };
        if let Ok(msg) = sv1_wire::Message::parse(line) {
            match direction % 2 {
                0 => tap::note_request(&msg, &conn),
                _ => tap::note_answer(probe::mono_ns(), &msg, 0, &conn, &recorder, &stats),
            }
        }
    });
}
