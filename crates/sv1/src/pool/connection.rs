//! One miner's connection: its session and its socket's writes, shared by the task that
//! reads the miner and the pool's fan-out. The fan-out writes each new job to every
//! connection itself, one non-blocking `write` each as a bare loop would, rather than
//! waking a task per miner to do it. What a full socket cannot take waits in the
//! connection's queue, which its task drains when the socket has room; every write goes
//! through the connection's lock, so the miner's bytes stay in order.

use super::session::Session;
use super::templates::PoolJob;
use super::Shared;
use crate::wire::{read_line, ReadError};
use parking_lot::Mutex;
use probe::{Event, Recorder};
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use sv1_wire::Message;
use tokio::io::{AsyncRead, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// Bytes a miner may leave unread before it is closed: a few hundred jobs.
const MAX_UNSENT: usize = 1 << 20;

/// Where a connection's bytes go.
pub(crate) trait Outbound: Send + Sync + 'static {
    /// Writes what the socket takes now, without waiting (`WouldBlock` when nothing fits).
    fn try_write(&self, bytes: &[u8]) -> io::Result<usize>;
    /// Resolves when the socket may take more.
    fn writable(&self) -> impl Future<Output = io::Result<()>> + Send;
}

impl Outbound for OwnedWriteHalf {
    /// Straight to the socket: tokio's own `try_write` first reads the socket's readiness,
    /// one more line of memory a fan-out would wait on at every connection. Only a full
    /// socket goes through tokio, which then learns it is full, so `writable` waits for
    /// room. A closed peer is an error, not SIGPIPE, as with tokio's own write.
    fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        let socket = socket2::SockRef::from(self.as_ref());
        match socket.send_with_flags(bytes, libc::MSG_NOSIGNAL) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                OwnedWriteHalf::try_write(self, bytes)
            }
            sent => sent,
        }
    }

    async fn writable(&self) -> io::Result<()> {
        OwnedWriteHalf::writable(self).await
    }
}

/// A connection as the fan-out sees it.
pub(super) trait Deliver: Send + Sync {
    /// Sends `job` unless the miner has it; `delivery` ends when the write returns.
    fn offer(&self, job: &PoolJob, delivery: Delivery);
}

/// One job's fan-out: written to every connection once the last connection's write
/// returns (or the connection is gone), recorded then as `JobWritten`.
pub(super) struct FanOut {
    job_id: String,
    connections: u32,
    left: AtomicU32,
    recorder: Recorder,
}

impl FanOut {
    pub(super) fn new(job: &PoolJob, connections: usize, recorder: Recorder) -> Arc<FanOut> {
        let connections = connections as u32;
        Arc::new(FanOut {
            job_id: job.job.job_id.clone(),
            connections,
            left: AtomicU32::new(connections),
            recorder,
        })
    }
}

/// One connection's part of a fan-out, done when dropped.
pub(super) struct Delivery(pub(super) Arc<FanOut>);

impl Drop for Delivery {
    fn drop(&mut self) {
        let fan_out = &self.0;
        if fan_out.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            fan_out.recorder.record(Event::JobWritten {
                job_id: fan_out.job_id.clone(),
                connections: fan_out.connections,
            });
        }
    }
}

struct Connection<W> {
    out: W,
    state: Mutex<State>,
    /// Rung when the fan-out queued bytes or closed the connection.
    wake: Notify,
}

struct State {
    session: Session,
    outbox: Outbox,
}

impl State {
    /// Sends `job` unless the miner has it: `set_difficulty` first when it changed, in one
    /// write with the job. True when some of its bytes wait in the queue.
    fn send_job(&mut self, out: &impl Outbound, job: &PoolJob) -> bool {
        let Some(notice) = self.session.notify(job) else {
            return false;
        };
        match notice.difficulty {
            Some(difficulty) => {
                let mut bytes = difficulty.to_line();
                bytes.extend_from_slice(notice.line);
                self.outbox.send(out, &bytes)
            }
            None => self.outbox.send(out, notice.line),
        }
    }
}

/// A connection's writes: at once when the socket takes them, else queued in order.
#[derive(Default)]
struct Outbox {
    /// Bytes the socket did not take yet, sent before anything after them.
    unsent: Vec<u8>,
    /// Bytes ever queued, and ever written from the queue.
    queued: u64,
    flushed: u64,
    /// Fan-outs whose job's bytes are in `unsent`, each with `queued` just after its job:
    /// done once `flushed` reaches it.
    awaiting: VecDeque<(u64, Delivery)>,
    /// Why the connection must close, once it must.
    closing: Option<String>,
}

impl Outbox {
    /// Sends `bytes` after anything queued: what the socket takes now is written, the rest
    /// queued. True when some of them wait in the queue.
    fn send(&mut self, out: &impl Outbound, bytes: &[u8]) -> bool {
        if self.closing.is_some() {
            return false;
        }
        let written = match self.unsent.is_empty() {
            true => write_now(out, bytes),
            false => Ok(0),
        };
        match written {
            Ok(n) if self.unsent.len() + bytes.len() - n > MAX_UNSENT => {
                self.close(format!(
                    "the miner is not reading: over {MAX_UNSENT} bytes unsent"
                ));
            }
            Ok(n) => {
                self.unsent.extend_from_slice(&bytes[n..]);
                self.queued += (bytes.len() - n) as u64;
            }
            Err(e) => self.close(format!("write failed: {e}")),
        }
        !self.unsent.is_empty()
    }

    /// Writes what the socket takes of the queue; each fan-out whose job is all written is
    /// done.
    fn flush(&mut self, out: &impl Outbound) {
        match write_now(out, &self.unsent) {
            Ok(n) => {
                self.unsent.drain(..n);
                self.flushed += n as u64;
            }
            Err(e) => self.close(format!("write failed: {e}")),
        }
        while (self.awaiting.front()).is_some_and(|&(end, _)| end <= self.flushed) {
            self.awaiting.pop_front();
        }
    }

    /// A fan-out whose job's bytes were just queued.
    fn await_written(&mut self, delivery: Delivery) {
        self.awaiting.push_back((self.queued, delivery));
    }

    fn close(&mut self, why: String) {
        self.closing.get_or_insert(why);
        self.unsent.clear();
        self.awaiting.clear();
    }
}

/// Writes what `out` takes of `bytes` now: their count, short when the socket is full.
fn write_now(out: &impl Outbound, bytes: &[u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < bytes.len() {
        match out.try_write(&bytes[n..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl<W: Outbound> Deliver for Connection<W> {
    fn offer(&self, job: &PoolJob, delivery: Delivery) {
        let mut state = self.state.lock();
        // A miner that has the job may have been sent it by its own task a moment ago,
        // still queued: done once what is queued now is written.
        if state.send_job(&self.out, job) || !state.outbox.unsent.is_empty() {
            state.outbox.await_written(delivery);
            self.wake.notify_one();
        } else if state.outbox.closing.is_some() {
            self.wake.notify_one();
        }
    }
}

pub(crate) async fn serve(stream: TcpStream, peer: SocketAddr, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let (read, write) = stream.into_split();
    serve_connection(read, write, peer, shared).await
}

/// Serves one miner on any byte stream (a socket, or the fuzzer's bytes).
pub(crate) async fn serve_connection(
    read: impl AsyncRead + Unpin,
    out: impl Outbound,
    peer: SocketAddr,
    shared: Arc<Shared>,
) {
    let mut read = BufReader::new(read);
    let conn = Arc::new(Connection {
        out,
        state: Mutex::new(State {
            session: Session::new(&shared),
            outbox: Outbox::default(),
        }),
        wake: Notify::new(),
    });
    // Where the fan-out finds the connection, once the miner is ready for work.
    let mut listed = None;
    let mut line = Vec::new();
    tracing::debug!(%peer, "miner connected");
    let reason = loop {
        let backlog = {
            let outbox = &conn.state.lock().outbox;
            if let Some(why) = &outbox.closing {
                break why.clone();
            }
            !outbox.unsent.is_empty()
        };
        tokio::select! {
            got = read_line(&mut read, &mut line) => {
                match got {
                    Ok(()) => {}
                    Err(ReadError::Closed) => break "closed by the miner".to_string(),
                    Err(e) => break e.to_string(),
                }
                let mut state = conn.state.lock();
                let outcome = state.session.handle(&line, &shared);
                line.clear();
                for reply in outcome.replies {
                    state.outbox.send(&conn.out, &Message::from(reply).to_line());
                }
                if let Some(why) = outcome.close {
                    // The error reply goes if the socket takes it now; a miner being
                    // closed is not waited on.
                    state.outbox.closing.get_or_insert(why);
                    continue;
                }
                if outcome.send_job {
                    // Listed before the current job is read, so no job published after
                    // is missed: the miner's first work, or the current job again under
                    // a new difficulty (a miner applies set_difficulty from its next job).
                    if listed.is_none() {
                        listed = Some(shared.list(conn.clone()));
                    }
                    state.send_job(&conn.out, &shared.current_job());
                }
            }
            () = conn.wake.notified() => {}
            ready = conn.out.writable(), if backlog => match ready {
                Ok(()) => conn.state.lock().outbox.flush(&conn.out),
                Err(e) => break format!("write failed: {e}"),
            },
        }
    };
    drop(listed);
    tracing::info!(%peer, %reason, "miner disconnected");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket that takes `room` more bytes, then is full until given more.
    #[derive(Default)]
    struct Socket {
        room: Mutex<usize>,
        written: Mutex<Vec<u8>>,
    }

    impl Socket {
        fn make_room(&self, bytes: usize) {
            *self.room.lock() += bytes;
        }
    }

    impl Outbound for Socket {
        fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
            let mut room = self.room.lock();
            // A socket takes some of what is asked, as a kernel does near full.
            let n = bytes.len().min(*room).min(5);
            if n == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            *room -= n;
            self.written.lock().extend_from_slice(&bytes[..n]);
            Ok(n)
        }

        async fn writable(&self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A fan-out to one connection, and whether that connection's write is done.
    fn fan_out() -> (Arc<FanOut>, impl Fn() -> bool) {
        let fan_out = Arc::new(FanOut {
            job_id: "7".into(),
            connections: 1,
            left: AtomicU32::new(1),
            recorder: Recorder::disabled(),
        });
        let watched = fan_out.clone();
        (fan_out, move || watched.left.load(Ordering::Acquire) == 0)
    }

    #[test]
    fn what_a_full_socket_cannot_take_follows_in_order_and_completes_the_fan_out() {
        let socket = Socket::default();
        socket.make_room(12);
        let mut outbox = Outbox::default();
        assert!(!outbox.send(&socket, b"first line\n"), "11 bytes fit in 12");
        assert!(outbox.send(&socket, b"job one\n"), "1 of 8 fits");
        let (job, written) = fan_out();
        outbox.await_written(Delivery(job));
        // Queued behind the rest, though the socket now has room: nothing overtakes.
        socket.make_room(100);
        assert!(outbox.send(&socket, b"reply\n"));
        assert_eq!(socket.written.lock().as_slice(), b"first line\nj");
        assert!(!written(), "the job is not written yet");
        // Room for 7 more: the job's last byte leaves, so it is done, though the reply
        // behind it waits.
        *socket.room.lock() = 7;
        outbox.flush(&socket);
        assert_eq!(socket.written.lock().as_slice(), b"first line\njob one\n");
        assert!(written(), "the job is written");
        socket.make_room(100);
        outbox.flush(&socket);
        assert!(outbox.unsent.is_empty());
        assert_eq!(
            socket.written.lock().as_slice(),
            b"first line\njob one\nreply\n"
        );
        assert!(outbox.closing.is_none());
    }

    #[test]
    fn a_miner_that_stops_reading_is_closed_not_buffered_without_end() {
        let socket = Socket::default();
        let mut outbox = Outbox::default();
        let (fan_out, written) = fan_out();
        let mut fan_out = Some(fan_out);
        let job = vec![b'x'; 600];
        let mut sent = 0;
        while outbox.closing.is_none() {
            outbox.send(&socket, &job);
            sent += 1;
            if let Some(fan_out) = fan_out.take() {
                outbox.await_written(Delivery(fan_out));
            }
        }
        assert_eq!(
            sent,
            MAX_UNSENT / 600 + 1,
            "closed at the first job past the bound"
        );
        let why = outbox.closing.as_deref().unwrap();
        assert!(why.contains("not reading"), "{why}");
        assert!(
            outbox.unsent.is_empty(),
            "a closed connection keeps nothing"
        );
        assert!(written(), "a fan-out does not wait on it");
        assert!(
            !outbox.send(&socket, b"more\n"),
            "nothing is queued once closing"
        );
    }
}
