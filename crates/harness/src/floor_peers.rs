//! The fan-out bench's floor receivers: connections to the floor's listener, each read as
//! its bytes arrive and thrown away, in a process of their own as a fleet's miners are.
//! Every write of the floor then wakes a reader waiting in epoll, as every write of a real
//! fan-out does.

use crate::roles::{Ready, Role, Running};
use anyhow::{Context, Result};
use probe::Recorder;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use tokio::io::AsyncReadExt;
use tokio::task::JoinSet;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FloorPeersConfig {
    pub connect: SocketAddr,
    pub connections: u32,
}

/// The readers, one task a connection.
pub struct FloorPeers {
    readers: JoinSet<()>,
}

impl Role for FloorPeersConfig {
    type Running = FloorPeers;
    async fn start(self, _: &Recorder) -> Result<FloorPeers> {
        let mut readers = JoinSet::new();
        for i in 0..self.connections {
            let mut stream = tokio::net::TcpStream::connect(self.connect)
                .await
                .with_context(|| format!("floor peer {i}: cannot connect to {}", self.connect))?;
            readers.spawn(async move {
                // A fleet miner's read buffer.
                let mut buf = vec![0u8; 8192];
                while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
            });
        }
        Ok(FloorPeers { readers })
    }
}

impl Running for FloorPeers {
    fn ready(&self) -> Ready {
        Ready::default()
    }
    async fn stop(mut self, _: &Recorder) -> Result<()> {
        self.readers.shutdown().await;
        Ok(())
    }
}
