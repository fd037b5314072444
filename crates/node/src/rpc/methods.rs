//! The RPC methods SV1 pools call, with bitcoind's result shapes.

use super::params::{Params, Signature};
use super::{
    Reply, RpcError, RPC_DESERIALIZATION_ERROR, RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER,
    RPC_METHOD_NOT_FOUND,
};
use crate::chain::ChainBlock;
use crate::shared::Shared;
use bitcoin::{Address, Block, BlockHash, Network, Script, Transaction};
use serde_json::{json, Value};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The simulated network answers as bitcoind on regtest.
pub const CHAIN: &str = "regtest";
const NETWORK: Network = Network::Regtest;
/// How long a longpoll waits before a mempool change alone releases it (bitcoind: 1 min).
const LONGPOLL_MEMPOOL_WAIT: Duration = Duration::from_secs(60);

macro_rules! sig {
    ($usage:literal, $required:literal $(, $name:literal)*) => {
        Signature { names: &[$($name),*], required: $required, usage: $usage }
    };
}

/// How a method is answered.
enum Call {
    /// `getblocktemplate`, light or not: it may wait on a longpoll.
    Template { light: bool },
    /// At once, with a JSON result.
    Json(fn(&Arc<Shared>, &Params) -> Result<Value, RpcError>),
    /// `waitfornewblock`: once the tip moves, or at its timeout.
    WaitForNewBlock,
}

/// Every method: its signature, in `help` order, and how it is answered.
const METHODS: &[(&str, Signature, Call)] = &[
    (
        "decoderawtransaction",
        sig!(
            "decoderawtransaction \"hexstring\" ( iswitness )",
            1,
            "hexstring",
            "iswitness"
        ),
        Call::Json(decoderawtransaction),
    ),
    (
        "generatetoaddress",
        sig!(
            "generatetoaddress nblocks \"address\" ( maxtries )",
            2,
            "nblocks",
            "address",
            "maxtries"
        ),
        Call::Json(generatetoaddress),
    ),
    (
        "getaddressinfo",
        sig!("getaddressinfo \"address\"", 1, "address"),
        Call::Json(|_, p| Ok(address_json(p.required_str(0)?))),
    ),
    (
        "getbestblockhash",
        sig!("getbestblockhash", 0),
        Call::Json(|shared, _| Ok(json!(shared.sync().tip_hash().to_string()))),
    ),
    (
        "getblock",
        sig!(
            "getblock \"blockhash\" ( verbosity )",
            1,
            "blockhash",
            "verbosity"
        ),
        Call::Json(getblock),
    ),
    (
        "getblockchaininfo",
        sig!("getblockchaininfo", 0),
        Call::Json(getblockchaininfo),
    ),
    (
        "getblockcount",
        sig!("getblockcount", 0),
        Call::Json(|shared, _| Ok(json!(shared.sync().chain().height()))),
    ),
    (
        "getblockhash",
        sig!("getblockhash height", 1, "height"),
        Call::Json(getblockhash),
    ),
    (
        "getblockheader",
        sig!(
            "getblockheader \"blockhash\" ( verbose )",
            1,
            "blockhash",
            "verbose"
        ),
        Call::Json(getblockheader),
    ),
    (
        "getblocktemplate",
        sig!(
            "getblocktemplate {\"rules\":[\"segwit\"],...}",
            0,
            "template_request"
        ),
        Call::Template { light: false },
    ),
    (
        "getblocktemplatelight",
        sig!(
            "getblocktemplatelight {\"rules\":[\"segwit\"],...}",
            0,
            "template_request"
        ),
        Call::Template { light: true },
    ),
    (
        "getconnectioncount",
        sig!("getconnectioncount", 0),
        Call::Json(|_, _| Ok(json!(8))),
    ),
    (
        "getdifficulty",
        sig!("getdifficulty", 0),
        Call::Json(|shared, _| Ok(json!(difficulty(&shared.sync())))),
    ),
    (
        "getmempoolinfo",
        sig!("getmempoolinfo", 0),
        Call::Json(getmempoolinfo),
    ),
    (
        "getmininginfo",
        sig!("getmininginfo", 0),
        Call::Json(getmininginfo),
    ),
    (
        "getnetworkhashps",
        sig!(
            "getnetworkhashps ( nblocks height )",
            0,
            "nblocks",
            "height"
        ),
        Call::Json(|shared, _| Ok(json!(network_hashps(&shared.sync())))),
    ),
    (
        "getnetworkinfo",
        sig!("getnetworkinfo", 0),
        Call::Json(getnetworkinfo),
    ),
    (
        "getpeerinfo",
        sig!("getpeerinfo", 0),
        Call::Json(|_, _| Ok(json!([]))),
    ),
    (
        "getrawmempool",
        sig!(
            "getrawmempool ( verbose mempool_sequence )",
            0,
            "verbose",
            "mempool_sequence"
        ),
        Call::Json(getrawmempool),
    ),
    ("getrpcinfo", sig!("getrpcinfo", 0), Call::Json(getrpcinfo)),
    // Not bitcoind's: a follower's peer's virtual time zero (a deployment's farm node).
    (
        crate::peer::CLOCK_METHOD,
        sig!("getsimulationclock", 0),
        Call::Json(|shared, _| {
            Ok(json!(crate::peer::SimulationClock {
                start_mono_ns: shared.start_mono_ns(),
                clock: probe::clock::clock_id(),
            }))
        }),
    ),
    // Not bitcoind's: when the tip changed to a block, for a follower's lag.
    (
        crate::peer::TIP_CLOCK_METHOD,
        sig!("getsimulationtipclock \"blockhash\"", 1, "blockhash"),
        Call::Json(|shared, p| {
            let hash = parse_hash(p.required_str(0)?)?;
            Ok(json!(shared.tip_changed_at(&hash)))
        }),
    ),
    (
        "getzmqnotifications",
        sig!("getzmqnotifications", 0),
        Call::Json(getzmqnotifications),
    ),
    (
        "help",
        sig!("help ( \"command\" )", 0, "command"),
        Call::Json(|_, p| Ok(json!(help(p.str(0)?)?))),
    ),
    ("ping", sig!("ping", 0), Call::Json(|_, _| Ok(Value::Null))),
    (
        "preciousblock",
        sig!("preciousblock \"blockhash\"", 1, "blockhash"),
        Call::Json(preciousblock),
    ),
    ("stop", sig!("stop", 0), Call::Json(stop)),
    (
        "submitblock",
        sig!(
            "submitblock \"hexdata\" ( \"dummy\" )",
            1,
            "hexdata",
            "dummy"
        ),
        Call::Json(|shared, p| submit_block(shared, p.required_str(0)?)),
    ),
    (
        "submitblocklight",
        sig!(
            "submitblocklight \"hexdata\" \"job_id\"",
            2,
            "hexdata",
            "job_id"
        ),
        Call::Json(|shared, p| submit_block_light(shared, p.required_str(0)?, p.required_str(1)?)),
    ),
    (
        "uptime",
        sig!("uptime", 0),
        Call::Json(|shared, _| Ok(json!(shared.started.elapsed().as_secs()))),
    ),
    (
        "validateaddress",
        sig!("validateaddress \"address\"", 1, "address"),
        Call::Json(|_, p| Ok(address_json(p.required_str(0)?))),
    ),
    (
        "waitfornewblock",
        sig!(
            "waitfornewblock ( timeout \"current_tip\" )",
            0,
            "timeout",
            "current_tip"
        ),
        Call::WaitForNewBlock,
    ),
];

/// Runs `method` for `client` (the RPC user name it authenticated as).
pub async fn dispatch(
    shared: &Arc<Shared>,
    client: &str,
    method: &str,
    raw: Value,
) -> Result<Reply, RpcError> {
    let Some((_, sig, call)) = METHODS.iter().find(|(name, ..)| *name == method) else {
        return Err(RpcError::new(RPC_METHOD_NOT_FOUND, "Method not found"));
    };
    let p = Params::parse(sig, raw)?;
    match call {
        Call::Template { light } => get_block_template(shared, client, &p, *light).await,
        Call::Json(answer) => answer(shared, &p).map(Reply::Json),
        Call::WaitForNewBlock => wait_for_new_block(shared, &p).await.map(Reply::Json),
    }
}

/// As bitcoind's: waits until the tip differs from `current_tip` (or from the tip at the
/// call), at most `timeout` ms (0: no limit), and answers the tip then, `{hash, height}`.
async fn wait_for_new_block(shared: &Arc<Shared>, p: &Params) -> Result<Value, RpcError> {
    let timeout = p.u64(0)?.filter(|ms| *ms > 0).map(Duration::from_millis);
    let from = match p.str(1)? {
        Some(hash) => parse_hash(hash)?,
        None => shared.sync().tip_hash(),
    };
    let mut tip = shared.subscribe_tip();
    let moved = async {
        while shared.sync().tip_hash() == from {
            // The sender lives as long as the node; a closed one ends the wait.
            if tip.changed().await.is_err() {
                break;
            }
        }
    };
    match timeout {
        Some(limit) => drop(tokio::time::timeout(limit, moved).await),
        None => moved.await,
    }
    let state = shared.sync();
    Ok(json!({"hash": state.tip_hash().to_string(), "height": state.chain().height()}))
}

fn getblockhash(shared: &Arc<Shared>, p: &Params) -> Result<Value, RpcError> {
    let height = p.u64(0)?.expect("required");
    let state = shared.sync();
    let chain = state.chain();
    let hash = u32::try_from(height).ok().and_then(|h| {
        (chain.at_height(h).map(|b| b.hash))
            .or_else(|| chain.ancestry().header(h).map(|a| a.block_hash()))
    });
    let hash =
        hash.ok_or_else(|| RpcError::new(RPC_INVALID_PARAMETER, "Block height out of range"))?;
    Ok(json!(hash.to_string()))
}

fn getblockheader(shared: &Arc<Shared>, p: &Params) -> Result<Value, RpcError> {
    let hash = parse_hash(p.required_str(0)?)?;
    let verbose = p.bool(1)?.unwrap_or(true);
    let state = shared.sync();
    let header = match state.chain().get(&hash) {
        Some(block) if verbose => return Ok(header_json(&state, block)),
        Some(block) => block.block.header,
        None => {
            let (height, header) = find_ancestor(&state, &hash)?;
            if verbose {
                return Ok(ancestor_json(&state, height, &header));
            }
            header
        }
    };
    Ok(json!(bitcoin::consensus::encode::serialize_hex(&header)))
}

fn preciousblock(shared: &Arc<Shared>, p: &Params) -> Result<Value, RpcError> {
    // The emulated network never reorganises: a known block is already as precious
    // as it can be; an unknown one is bitcoind's error.
    let hash = parse_hash(p.required_str(0)?)?;
    let state = shared.sync();
    if state.chain().get(&hash).is_none() {
        find_ancestor(&state, &hash)?;
    }
    Ok(Value::Null)
}

fn getblock(shared: &Arc<Shared>, p: &Params) -> Result<Value, RpcError> {
    let hash = parse_hash(p.required_str(0)?)?;
    let verbosity = p.verbosity(1, 1)?;
    let state = shared.sync();
    if state.chain().get(&hash).is_none() && find_ancestor(&state, &hash).is_ok() {
        return Err(RpcError::new(
            super::RPC_MISC_ERROR,
            "Block not available (pruned data)",
        ));
    }
    let block = find_block(&state, &hash)?;
    if verbosity == 0 {
        return Ok(json!(bitcoin::consensus::encode::serialize_hex(
            &block.block
        )));
    }
    let mut v = header_json(&state, block);
    let b = &block.block;
    v["size"] = json!(b.total_size());
    v["strippedsize"] = json!(crate::validate::stripped_size(b));
    v["weight"] = json!(b.weight().to_wu());
    v["tx"] = if verbosity >= 2 {
        Value::Array(b.txdata.iter().map(tx_json).collect())
    } else {
        Value::Array(
            b.txdata
                .iter()
                .map(|t| json!(t.compute_txid().to_string()))
                .collect(),
        )
    };
    Ok(v)
}

fn getblockchaininfo(shared: &Arc<Shared>, _p: &Params) -> Result<Value, RpcError> {
    let state = shared.sync();
    let tip = state.chain().tip();
    Ok(json!({
        "chain": CHAIN,
        "blocks": tip.height,
        "headers": tip.height,
        "bestblockhash": tip.hash.to_string(),
        "bits": format!("{:08x}", tip.block.header.bits.to_consensus()),
        "target": hex::encode(tip.block.header.target().to_be_bytes()),
        "difficulty": difficulty(&state),
        "time": tip.block.header.time,
        "mediantime": tip.median_time,
        "verificationprogress": 1.0,
        "initialblockdownload": false,
        "chainwork": hex::encode(tip.chainwork),
        "size_on_disk": 0,
        // Below the base block the node keeps headers only, as a pruned node does.
        "pruned": state.chain().base_height() > 0,
        "warnings": [],
    }))
}

fn getmininginfo(shared: &Arc<Shared>, _p: &Params) -> Result<Value, RpcError> {
    let state = shared.sync();
    let tip = state.chain().tip();
    Ok(json!({
        "blocks": tip.height,
        "currentblockweight": tip.block.weight().to_wu(),
        "currentblocktx": tip.block.txdata.len() - 1,
        "bits": format!("{:08x}", state.bits().to_consensus()),
        "difficulty": difficulty(&state),
        "target": hex::encode(bitcoin::Target::from_compact(state.bits()).to_be_bytes()),
        "networkhashps": network_hashps(&state),
        "pooledtx": state.mempool().len(),
        "chain": CHAIN,
        "warnings": [],
    }))
}

fn getmempoolinfo(shared: &Arc<Shared>, _p: &Params) -> Result<Value, RpcError> {
    let state = shared.sync();
    let m = state.mempool();
    Ok(json!({
        "loaded": true,
        "size": m.len(),
        "bytes": m.total_weight().div_ceil(4),
        "usage": m.total_weight(),
        "total_fee": m.total_fees() as f64 / 1e8,
        "maxmempool": 300_000_000,
        "mempoolminfee": 0.00001,
        "minrelaytxfee": 0.00001,
        "incrementalrelayfee": 0.00001,
        "unbroadcastcount": 0,
        "fullrbf": true,
    }))
}

fn getrawmempool(shared: &Arc<Shared>, _p: &Params) -> Result<Value, RpcError> {
    let state = shared.sync();
    let ids: Vec<Value> = state
        .mempool()
        .txids()
        .map(|t| json!(t.to_string()))
        .collect();
    Ok(Value::Array(ids))
}

fn getnetworkinfo(_shared: &Arc<Shared>, _p: &Params) -> Result<Value, RpcError> {
    Ok(json!({
        "version": 290000,
        "subversion": concat!("/Satoshi:29.0.0/stratum-bench:", env!("CARGO_PKG_VERSION"), "/"),
        "protocolversion": 70016,
        "localservices": "0000000000000409",
        "localservicesnames": ["NETWORK", "WITNESS", "NETWORK_LIMITED"],
        "localrelay": true,
        "timeoffset": 0,
        "networkactive": true,
        "connections": 8,
        "connections_in": 0,
        "connections_out": 8,
        "networks": [],
        "relayfee": 0.00001,
        "incrementalfee": 0.00001,
        "localaddresses": [],
        "warnings": [],
    }))
}

fn getrpcinfo(_shared: &Arc<Shared>, _p: &Params) -> Result<Value, RpcError> {
    Ok(json!({
        "active_commands": [{"method": "getrpcinfo", "duration": 0}],
        "logpath": "",
    }))
}

fn getzmqnotifications(shared: &Arc<Shared>, _p: &Params) -> Result<Value, RpcError> {
    Ok(Value::Array(
        shared
            .zmq_endpoint()
            .map(|addr| {
                ["pubhashblock", "pubrawblock"]
                    .iter()
                    .map(|t| json!({"type": t, "address": addr, "hwm": 1000}))
                    .collect()
            })
            .unwrap_or_default(),
    ))
}

fn stop(shared: &Arc<Shared>, _p: &Params) -> Result<Value, RpcError> {
    shared.request_stop();
    Ok(json!("stratum-bench node stopping"))
}

fn decoderawtransaction(_shared: &Arc<Shared>, p: &Params) -> Result<Value, RpcError> {
    let tx: Transaction = decode_hex(p.required_str(0)?)
        .map_err(|_| RpcError::new(RPC_DESERIALIZATION_ERROR, "TX decode failed"))?;
    Ok(tx_json(&tx))
}

fn generatetoaddress(shared: &Arc<Shared>, p: &Params) -> Result<Value, RpcError> {
    let n = p.u64(0)?.expect("required");
    let address = parse_address(p.required_str(1)?)?;
    let mut hashes = Vec::new();
    let mut state = shared.sync();
    let mut tips = Vec::new();
    for _ in 0..n.min(1000) {
        let tip = state.mine_network_block(Some(address.script_pubkey()));
        hashes.push(json!(tip.hash.to_string()));
        tips.push(tip);
    }
    shared.announce(&tips);
    Ok(Value::Array(hashes))
}

async fn get_block_template(
    shared: &Arc<Shared>,
    client: &str,
    p: &Params,
    light: bool,
) -> Result<Reply, RpcError> {
    let request = p.object(0)?.cloned().unwrap_or_default();
    let mode = request
        .get("mode")
        .and_then(Value::as_str)
        .unwrap_or("template");
    if mode == "proposal" {
        let data = request.get("data").and_then(Value::as_str).ok_or_else(|| {
            RpcError::new(
                super::RPC_TYPE_ERROR,
                "Missing data String key for proposal",
            )
        })?;
        let block: Block = decode_hex(data)
            .map_err(|_| RpcError::new(RPC_DESERIALIZATION_ERROR, "Block decode failed"))?;
        // As bitcoind: a proposal is checked for everything but its proof of work.
        // BIP23: a proposal is checked as if its header were valid.
        let verdict = shared.sync().check_proposal(
            &block,
            crate::validate::Checks {
                pow: false,
                merkle_root: true,
            },
        );
        return Ok(Reply::Json(verdict.map_or(Value::Null, Value::String)));
    }
    if mode != "template" {
        return Err(RpcError::new(RPC_INVALID_PARAMETER, "Invalid mode"));
    }
    let segwit = request
        .get("rules")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|x| x == "segwit"));
    if !segwit {
        return Err(RpcError::new(
            RPC_INVALID_PARAMETER,
            "getblocktemplate must be called with the segwit rule set (call with {\"rules\": [\"segwit\"]})",
        ));
    }
    if let Some(longpollid) = request.get("longpollid").and_then(Value::as_str) {
        wait_for_newer_template(shared, client, longpollid).await;
    }
    let template = shared.template(client);
    let curtime = shared.sync().header_time();
    // Rendered outside the lock: the big part was rendered once, as each tx arrived.
    Ok(Reply::Raw(template.gbt_json(curtime, light)))
}

/// Holds a longpoll until the tip changes, or until the mempool changed and a minute has
/// passed (as bitcoind does), when `longpollid` is the current template's.
async fn wait_for_newer_template(shared: &Arc<Shared>, client: &str, longpollid: &str) {
    let started = Instant::now();
    let mut tip = shared.subscribe_tip();
    // What the client's current template was made on: a tip that moves after this still
    // wakes the longpoll.
    let current = shared.template(client);
    if current.longpollid() != longpollid {
        return;
    }
    let (tip_at_call, version_at_call) = (current.prev_hash, current.mempool_version);
    loop {
        tokio::select! {
            changed = tip.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        let state = shared.sync();
        if state.tip_hash() != tip_at_call {
            return;
        }
        if started.elapsed() >= LONGPOLL_MEMPOOL_WAIT
            && state.mempool().version() != version_at_call
        {
            return;
        }
    }
}

fn submit_block(shared: &Arc<Shared>, hex_data: &str) -> Result<Value, RpcError> {
    let mut block = decode_block(hex_data)?;
    crate::validate::fill_witness_reserved_value(&mut block);
    judge_block(shared, block, "submitblock")
}

/// A block of header and coinbase only, completed with the transactions of the template
/// `job_id` (from getblocktemplatelight).
fn submit_block_light(
    shared: &Arc<Shared>,
    hex_data: &str,
    job_id: &str,
) -> Result<Value, RpcError> {
    let partial = decode_block(hex_data)?;
    let template = u64::from_str_radix(job_id, 16)
        .ok()
        .and_then(|id| shared.sync().recent_template(id))
        .ok_or_else(|| RpcError::new(RPC_INVALID_PARAMETER, "job_id data not available"))?;
    let coinbase = partial
        .txdata
        .into_iter()
        .next()
        .expect("decode_block checked the coinbase");
    let block = crate::template::assemble_block(
        partial.header,
        coinbase,
        &template.coinbase_merkle_branch,
        template.txs.iter().map(|t| t.tx.clone()),
    );
    judge_block(shared, block, "submitblocklight")
}

fn decode_block(hex_data: &str) -> Result<Block, RpcError> {
    let block: Block = decode_hex(hex_data)
        .map_err(|_| RpcError::new(RPC_DESERIALIZATION_ERROR, "Block decode failed"))?;
    if block.txdata.first().is_none_or(|t| !t.is_coinbase()) {
        return Err(RpcError::new(
            RPC_DESERIALIZATION_ERROR,
            "Block does not start with a coinbase",
        ));
    }
    Ok(block)
}

fn judge_block(shared: &Arc<Shared>, block: Block, via: &str) -> Result<Value, RpcError> {
    Ok(match shared.judge_block(block, via) {
        None => Value::Null,
        Some(reason) => Value::String(reason),
    })
}

fn decode_hex<T: bitcoin::consensus::Decodable>(text: &str) -> Result<T, ()> {
    let bytes = hex::decode(text.trim()).map_err(|_| ())?;
    bitcoin::consensus::deserialize(&bytes).map_err(|_| ())
}

fn parse_hash(text: &str) -> Result<BlockHash, RpcError> {
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(RpcError::new(
            RPC_INVALID_PARAMETER,
            format!(
                "blockhash must be of length 64 (not {}, for '{text}')",
                text.len()
            ),
        ));
    }
    BlockHash::from_str(text).map_err(|_| {
        RpcError::new(
            RPC_INVALID_PARAMETER,
            "blockhash must be hexadecimal string",
        )
    })
}

fn find_block<'a>(
    state: &'a crate::state::NodeState,
    hash: &BlockHash,
) -> Result<&'a Arc<ChainBlock>, RpcError> {
    state
        .chain()
        .get(hash)
        .ok_or_else(|| RpcError::new(RPC_INVALID_ADDRESS_OR_KEY, "Block not found"))
}

/// A header below the base block, by hash: its height and header.
fn find_ancestor(
    state: &crate::state::NodeState,
    hash: &BlockHash,
) -> Result<(u32, bitcoin::block::Header), RpcError> {
    let ancestry = state.chain().ancestry();
    ancestry
        .height_of(hash)
        .and_then(|h| Some((h, ancestry.header(h)?)))
        .ok_or_else(|| RpcError::new(RPC_INVALID_ADDRESS_OR_KEY, "Block not found"))
}

/// `getblockheader` of a header below the base block, as bitcoind shows one.
fn ancestor_json(
    state: &crate::state::NodeState,
    height: u32,
    h: &bitcoin::block::Header,
) -> Value {
    let chain = state.chain();
    let ancestry = chain.ancestry();
    let times: Vec<u32> = (height.saturating_sub(10)..=height)
        .filter_map(|k| ancestry.header(k).map(|a| a.time))
        .collect();
    let mut sorted = times.clone();
    sorted.sort_unstable();
    let next = (ancestry.header(height + 1).map(|a| a.block_hash()))
        .or_else(|| chain.at_height(height + 1).map(|b| b.hash));
    let mut v = json!({
        "hash": h.block_hash().to_string(),
        "confirmations": i64::from(chain.height() - height) + 1,
        "height": height,
        "version": h.version.to_consensus(),
        "versionHex": format!("{:08x}", h.version.to_consensus()),
        "merkleroot": h.merkle_root.to_string(),
        "time": h.time,
        "mediantime": sorted[sorted.len() / 2],
        "nonce": h.nonce,
        "bits": format!("{:08x}", h.bits.to_consensus()),
        "target": hex::encode(h.target().to_be_bytes()),
        "difficulty": h.difficulty_float(),
        "chainwork": hex::encode(ancestry.chainwork(height).to_be_bytes()),
        "nTx": 1,
    });
    if height > 0 {
        v["previousblockhash"] = json!(h.prev_blockhash.to_string());
    }
    if let Some(next) = next {
        v["nextblockhash"] = json!(next.to_string());
    }
    v
}

fn header_json(state: &crate::state::NodeState, b: &ChainBlock) -> Value {
    let h = &b.block.header;
    let mut v = json!({
        "hash": b.hash.to_string(),
        "confirmations": state.chain().confirmations(&b.hash),
        "height": b.height,
        "version": h.version.to_consensus(),
        "versionHex": format!("{:08x}", h.version.to_consensus()),
        "merkleroot": h.merkle_root.to_string(),
        "time": h.time,
        "mediantime": b.median_time,
        "nonce": h.nonce,
        "bits": format!("{:08x}", h.bits.to_consensus()),
        "target": hex::encode(h.target().to_be_bytes()),
        "difficulty": h.difficulty_float(),
        "chainwork": hex::encode(b.chainwork),
        "nTx": b.block.txdata.len(),
    });
    if b.height > 0 {
        v["previousblockhash"] = json!(h.prev_blockhash.to_string());
    }
    if let Some(next) = state.chain().at_height(b.height + 1) {
        if state.chain().is_active(&b.hash) {
            v["nextblockhash"] = json!(next.hash.to_string());
        }
    }
    v
}

fn difficulty(state: &crate::state::NodeState) -> f64 {
    bitcoin::Target::from_compact(state.bits()).difficulty_float()
}

/// Hashes per second the whole network needs for the configured block interval.
fn network_hashps(state: &crate::state::NodeState) -> f64 {
    difficulty(state) * 2f64.powi(32) / state.config().block_interval.as_secs_f64()
}

fn parse_address(text: &str) -> Result<Address, RpcError> {
    Address::from_str(text)
        .ok()
        .and_then(|a| a.require_network(NETWORK).ok())
        .ok_or_else(|| RpcError::new(RPC_INVALID_ADDRESS_OR_KEY, "Error: Invalid address"))
}

fn address_json(text: &str) -> Value {
    match parse_address(text) {
        Ok(address) => {
            let script = address.script_pubkey();
            let mut v = json!({
                "isvalid": true,
                "address": address.to_string(),
                "scriptPubKey": hex::encode(script.as_bytes()),
                "isscript": script.is_p2sh() || script.is_p2wsh(),
                "iswitness": script.is_witness_program(),
            });
            if let Some(program) = address.witness_program() {
                v["witness_version"] = json!(program.version().to_num());
                v["witness_program"] = json!(hex::encode(program.program().as_bytes()));
            }
            v
        }
        Err(_) => json!({"isvalid": false, "error": "Invalid or unsupported address"}),
    }
}

fn script_json(script: &Script) -> Value {
    let kind = if script.is_p2wpkh() {
        "witness_v0_keyhash"
    } else if script.is_p2wsh() {
        "witness_v0_scripthash"
    } else if script.is_p2tr() {
        "witness_v1_taproot"
    } else if script.is_p2pkh() {
        "pubkeyhash"
    } else if script.is_p2sh() {
        "scripthash"
    } else if script.is_op_return() {
        "nulldata"
    } else {
        "nonstandard"
    };
    let mut v = json!({
        "asm": script.to_asm_string(),
        "hex": hex::encode(script.as_bytes()),
        "type": kind,
    });
    if let Ok(address) = Address::from_script(script, NETWORK) {
        v["address"] = json!(address.to_string());
    }
    v
}

fn tx_json(tx: &Transaction) -> Value {
    let vin: Vec<Value> = tx
        .input
        .iter()
        .map(|i| {
            let mut v = if tx.is_coinbase() {
                json!({"coinbase": hex::encode(i.script_sig.as_bytes())})
            } else {
                json!({
                    "txid": i.previous_output.txid.to_string(),
                    "vout": i.previous_output.vout,
                    "scriptSig": {"asm": i.script_sig.to_asm_string(), "hex": hex::encode(i.script_sig.as_bytes())},
                })
            };
            if !i.witness.is_empty() {
                v["txinwitness"] = Value::Array(i.witness.iter().map(|w| json!(hex::encode(w))).collect());
            }
            v["sequence"] = json!(i.sequence.0);
            v
        })
        .collect();
    let vout: Vec<Value> = tx
        .output
        .iter()
        .enumerate()
        .map(|(n, o)| json!({"value": o.value.to_btc(), "n": n, "scriptPubKey": script_json(&o.script_pubkey)}))
        .collect();
    json!({
        "txid": tx.compute_txid().to_string(),
        "hash": tx.compute_wtxid().to_string(),
        "version": tx.version.0,
        "size": tx.total_size(),
        "vsize": tx.vsize(),
        "weight": tx.weight().to_wu(),
        "locktime": tx.lock_time.to_consensus_u32(),
        "vin": vin,
        "vout": vout,
        "hex": bitcoin::consensus::encode::serialize_hex(tx),
    })
}

fn help(command: Option<&str>) -> Result<String, RpcError> {
    match command {
        None => Ok(METHODS
            .iter()
            .map(|(_, s, _)| s.usage)
            .collect::<Vec<_>>()
            .join("\n")),
        Some(name) => METHODS
            .iter()
            .find(|(n, ..)| *n == name)
            .map(|(_, s, _)| s.usage.to_string())
            .ok_or_else(|| {
                RpcError::new(
                    super::RPC_MISC_ERROR,
                    format!("help: unknown command: {name}"),
                )
            }),
    }
}
