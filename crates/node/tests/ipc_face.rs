//! The Mining IPC face refuses a client of another interface version with a clear error,
//! and serves the right one.

mod common;

use bitcoin_capnp_types::capnp_rpc::{rpc_twoparty_capnp, twoparty, RpcSystem};
use bitcoin_capnp_types::init_capnp::init;
use node::{NodeConfig, NodeHandle, NodeOptions};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

async fn node_with_ipc(dir: &std::path::Path) -> NodeHandle {
    NodeHandle::start(NodeOptions {
        ipc_data_dir: Some(dir.to_path_buf()),
        ..common::loopback(NodeConfig {
            scripted_arrivals: Some(Vec::new()),
            ..NodeConfig::default()
        })
    })
    .await
    .unwrap()
}

/// Connects to the face as a capnp client and returns its Init capability.
async fn connect(socket: &std::path::Path) -> init::Client {
    let stream = tokio::net::UnixStream::connect(socket).await.unwrap();
    let (read, write) = stream.into_split();
    let network = twoparty::VatNetwork::new(
        read.compat(),
        write.compat_write(),
        rpc_twoparty_capnp::Side::Client,
        Default::default(),
    );
    let mut rpc = RpcSystem::new(Box::new(network), None);
    let client: init::Client = rpc.bootstrap(rpc_twoparty_capnp::Side::Server);
    tokio::task::spawn_local(rpc);
    client
}

#[tokio::test]
async fn a_client_of_interface_30_is_told_which_version_is_served() {
    let dir = std::env::temp_dir().join(format!("sb-ipc-{}", std::process::id()));
    let node = node_with_ipc(&dir).await;
    let socket = node.ipc.as_ref().unwrap().socket.clone();
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            let init = connect(&socket).await;
            let old = init.make_mining_old2_request().send().promise.await;
            let error = old.err().expect("version 30's makeMining is refused");
            assert!(
                error.to_string().contains(node::ipc::UNSUPPORTED_VERSION),
                "{error}"
            );
            // The same connection still serves version 31.
            let mining = init.make_mining_request().send().promise.await;
            assert!(mining.is_ok(), "version 31's makeMining is served");
        })
        .await;
    node.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
