//! How a farm's machines differ from one another: each miner's hashrate and the farm-LAN
//! delay between it and the first hop (the farm's proxy, or the WAN link). The harness
//! draws both from the scenario's distributions, once, and gives every side the same
//! draws, so the sides differ only in what they are compared on.

use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::sync::mpsc;

/// A farm's machines as every fleet runs them, whatever protocol they speak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machines {
    pub miners: u32,
    /// Hashes per second of each miner at nominal speed.
    pub hashrate: f64,
    /// Connections are spread over this long, as a farm's machines boot at different times.
    #[serde(with = "millis")]
    pub ramp: Duration,
    /// Threads that hash for all the miners.
    pub hash_threads: usize,
    /// How the miners differ: hashrate (a multiple of `hashrate`) and farm-LAN delay.
    #[serde(default)]
    pub per_miner: PerMiner,
    /// How each miner gets its pool back after losing it.
    #[serde(default)]
    pub reconnect: Reconnect,
}

impl Machines {
    /// `miners` alike, at `hashrate` each, all connecting at once, reconnecting as
    /// firmware does by default.
    pub fn alike(miners: u32, hashrate: f64, hash_threads: usize) -> Machines {
        Machines {
            miners,
            hashrate,
            ramp: Duration::ZERO,
            hash_threads,
            per_miner: PerMiner::default(),
            reconnect: Reconnect::default(),
        }
    }

    /// Each miner's hashrate, in order.
    pub fn hashrates(&self) -> Vec<f64> {
        self.per_miner.hashrates(self.hashrate, self.miners)
    }
}

/// A duration as whole milliseconds.
mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PerMiner {
    /// Each miner's hashrate as a multiple of the fleet's nominal one (their mean is 1);
    /// empty when every miner hashes alike.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hashrate_factor: Vec<f64>,
    /// Each miner's one-way farm-LAN delay in microseconds; empty when there is none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lan_delay_us: Vec<u64>,
}

impl PerMiner {
    /// Whether every miner is alike (nominal hashrate, no LAN delay).
    pub fn is_empty(&self) -> bool {
        self.hashrate_factor.is_empty() && self.lan_delay_us.is_empty()
    }

    /// Miner `index`'s hashrate, of a fleet whose nominal hashrate is `nominal`.
    pub fn hashrate(&self, nominal: f64, index: u32) -> f64 {
        nominal
            * self
                .hashrate_factor
                .get(index as usize)
                .copied()
                .unwrap_or(1.0)
    }

    /// Every miner's hashrate, of `miners` at `nominal`.
    pub fn hashrates(&self, nominal: f64, miners: u32) -> Vec<f64> {
        (0..miners).map(|i| self.hashrate(nominal, i)).collect()
    }

    /// Miner `index`'s one-way farm-LAN delay.
    pub fn lan_delay(&self, index: u32) -> Duration {
        Duration::from_micros(self.lan_delay_us.get(index as usize).copied().unwrap_or(0))
    }
}

/// How a miner gets its pool back, as device firmware does. The defaults are ESP-Miner's
/// (the Bitaxe firmware, stratum_task.c): a second's pause after a lost connection, a
/// failed connect tried again every 5 s, a pool that sends nothing for 180 s given up on
/// (its socket's receive timeout), the other pool after 3 failures in a row, and while on
/// the backup, a check of the primary every 60 s.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Reconnect {
    pub after: Duration,
    pub retry_every: Duration,
    pub silence: Duration,
    /// Failures in a row (a refused connect, a lost session) before the other pool.
    #[serde(default = "default_failover_after")]
    pub failover_after: u32,
    /// How often a miner on its backup checks whether the primary serves work again.
    #[serde(default = "default_primary_check_every")]
    pub primary_check_every: Duration,
}

fn default_failover_after() -> u32 {
    3
}

fn default_primary_check_every() -> Duration {
    Duration::from_secs(60)
}

impl Default for Reconnect {
    fn default() -> Self {
        Reconnect {
            after: Duration::from_secs(1),
            retry_every: Duration::from_secs(5),
            silence: Duration::from_secs(180),
            failover_after: default_failover_after(),
            primary_check_every: default_primary_check_every(),
        }
    }
}

/// Which of its pools a miner mines on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolChoice {
    Primary,
    Backup,
}

impl PoolChoice {
    /// As events name it.
    pub fn name(self) -> &'static str {
        match self {
            PoolChoice::Primary => "primary",
            PoolChoice::Backup => "backup",
        }
    }
}

/// A miner's choice between its primary pool and its backup, as ESP-Miner makes it: every
/// failure (a refused connect, a lost session) counts, a pool's answer clears the count,
/// and at `failover_after` in a row the miner turns to the other pool. Without a backup it
/// keeps trying the one it has.
#[derive(Debug, Clone)]
pub struct Failover {
    has_backup: bool,
    after: u32,
    failures: u32,
    on: PoolChoice,
    /// The choice last told (`turned`).
    told: PoolChoice,
}

impl Failover {
    pub fn new(has_backup: bool, reconnect: &Reconnect) -> Failover {
        Failover {
            has_backup,
            after: reconnect.failover_after.max(1),
            failures: 0,
            on: PoolChoice::Primary,
            told: PoolChoice::Primary,
        }
    }

    /// The pool to connect to next.
    pub fn pool(&self) -> PoolChoice {
        self.on
    }

    /// The pool answered: its failures are forgotten.
    pub fn answered(&mut self) {
        self.failures = 0;
    }

    /// A connect was refused or a session lost: at the last failure allowed in a row, the
    /// miner will connect to its other pool.
    pub fn failed(&mut self) {
        self.failures += 1;
        if self.failures < self.after || !self.has_backup {
            self.failures %= self.after;
            return;
        }
        self.failures = 0;
        self.on = match self.on {
            PoolChoice::Primary => PoolChoice::Backup,
            PoolChoice::Backup => PoolChoice::Primary,
        };
    }

    /// The primary answered a check: back to it.
    pub fn back_to_primary(&mut self) {
        self.failures = 0;
        self.on = PoolChoice::Primary;
    }

    /// The pool the miner turned to since it was last asked, if it turned: when firmware
    /// flips its choice (ESP-Miner: at its next connect after the failures, or at once
    /// when a check found its primary serving), which is when a fleet records the turn.
    pub fn turned(&mut self) -> Option<PoolChoice> {
        (self.on != self.told).then(|| {
            self.told = self.on;
            self.on
        })
    }

    /// Records miner `miner`'s turn to its other pool, if it turned.
    pub fn record_turn(&mut self, miner: u32, recorder: &probe::Recorder) {
        if let Some(to) = self.turned() {
            let to = to.name().into();
            recorder.record(probe::Event::PoolSwitched { miner, to });
        }
    }
}

/// How a miner's session with its pool ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEnd {
    /// The connect was refused: try again after `retry_every`.
    Refused,
    /// The connection ended, or the pool went silent: connect again after `after`.
    Lost,
    /// The miner is on its backup and its primary serves work again.
    PrimaryBack,
    /// The miner cannot mine (a listener it needs cannot be opened): it stops, its reason
    /// logged.
    CannotMine,
}

/// Tasks aborted when this is dropped: what a session started stops with it, however the
/// session ends (the fleet drops it when it stops).
pub struct AbortOnDrop(pub Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.iter().for_each(|task| task.abort());
    }
}

/// One protocol's sessions of one miner with its pool.
pub trait Sessions {
    /// Connects to the pool `failover` chooses and mines with it until the session ends
    /// (telling `failover` when the pool answers).
    fn session(
        &mut self,
        failover: &mut Failover,
    ) -> impl std::future::Future<Output = SessionEnd> + Send;
}

/// A miner for as long as its fleet runs (the fleet drops this to stop it): a session
/// with its pool, and another each time one ends, as firmware reconnects: after
/// `retry_every` when refused and `after` when lost, to its backup after failures in a
/// row, and back once its primary serves again. Each turn is recorded as the miner takes it.
/// It returns only when the miner cannot mine.
pub async fn reconnecting(
    miner: u32,
    reconnect: &Reconnect,
    has_backup: bool,
    recorder: &probe::Recorder,
    sessions: &mut impl Sessions,
) {
    let mut failover = Failover::new(has_backup, reconnect);
    loop {
        failover.record_turn(miner, recorder);
        let pause = match sessions.session(&mut failover).await {
            SessionEnd::Refused => {
                failover.failed();
                reconnect.retry_every
            }
            SessionEnd::Lost => {
                failover.failed();
                reconnect.after
            }
            SessionEnd::PrimaryBack => {
                // It leaves the backup now: the way back starts here.
                failover.back_to_primary();
                failover.record_turn(miner, recorder);
                reconnect.after
            }
            SessionEnd::CannotMine => return,
        };
        tokio::time::sleep(pause).await;
    }
}

/// Resolves once `check` (the primary serves work) holds, tried every `every`, for a
/// miner on its backup (`on`): how it learns its primary is back (ESP-Miner's heartbeat).
/// On the primary it never resolves: nothing is checked.
pub async fn primary_back<F, Fut>(on: PoolChoice, every: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    if on == PoolChoice::Primary {
        return std::future::pending().await;
    }
    loop {
        tokio::time::sleep(every).await;
        if check().await {
            return;
        }
    }
}

/// How long a check of the primary waits for its work (ESP-Miner's heartbeat socket
/// timeout).
pub const PRIMARY_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// One way across a farm's LAN: each item of `rx`, stamped with the moment it was sent
/// (`now()`'s clock, in nanoseconds), comes out `delay` later, in order, stamped with the
/// moment it arrives. With no delay `rx` is handed back as it is: no task, no extra hop.
pub fn lan_hop<T: Send + 'static>(
    mut rx: mpsc::UnboundedReceiver<(u64, T)>,
    delay: Duration,
    now: fn() -> u64,
) -> mpsc::UnboundedReceiver<(u64, T)> {
    if delay.is_zero() {
        return rx;
    }
    let (tx, out) = mpsc::unbounded_channel();
    let delay_ns = delay.as_nanos() as u64;
    tokio::spawn(async move {
        // One delay for every item: leaving in arrival order keeps them in order.
        while let Some((sent, item)) = rx.recv().await {
            let due = sent.saturating_add(delay_ns);
            let wait = due.saturating_sub(now());
            if wait > 0 {
                tokio::time::sleep(Duration::from_nanos(wait)).await;
            }
            if tx.send((due, item)).is_err() {
                return;
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> u64 {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        START
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }

    #[tokio::test]
    async fn the_lan_delays_each_item_by_its_delay_in_order() {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut out = lan_hop(rx, Duration::from_millis(30), now);
        let t0 = now();
        // A burst: both leave 30 ms after they were sent, not one after the other.
        tx.send((t0, "a")).unwrap();
        tx.send((t0, "b")).unwrap();
        let (ta, a) = out.recv().await.unwrap();
        let (tb, b) = out.recv().await.unwrap();
        let got = now();
        assert_eq!((a, b), ("a", "b"));
        assert_eq!((ta, tb), (t0 + 30_000_000, t0 + 30_000_000));
        assert!(got >= t0 + 30_000_000, "held for the delay");
        // Slack for a loaded machine: a burst is not delayed twice.
        assert!(got < t0 + 55_000_000, "{} ms", (got - t0) / 1_000_000);
    }

    #[tokio::test]
    async fn no_delay_is_no_hop() {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut out = lan_hop(rx, Duration::ZERO, now);
        tx.send((7, 1)).unwrap();
        assert_eq!(out.recv().await, Some((7, 1)), "the stamp is untouched");
    }

    #[test]
    fn a_miner_turns_to_its_backup_after_three_failures_in_a_row() {
        let mut f = Failover::new(true, &Reconnect::default());
        // A lost session, then two refused connects: the third failure turns it.
        f.failed();
        f.failed();
        assert_eq!((f.pool(), f.turned()), (PoolChoice::Primary, None));
        f.failed();
        assert_eq!(f.pool(), PoolChoice::Backup);
        // Told once.
        assert_eq!((f.turned(), f.turned()), (Some(PoolChoice::Backup), None));
        // The backup answers; its failures count from zero.
        f.answered();
        f.failed();
        f.failed();
        f.answered();
        f.failed();
        assert_eq!(f.pool(), PoolChoice::Backup);
        f.back_to_primary();
        assert_eq!(f.turned(), Some(PoolChoice::Primary));
        // An answer between failures clears them: no switch.
        f.failed();
        f.failed();
        f.answered();
        f.failed();
        assert_eq!((f.pool(), f.turned()), (PoolChoice::Primary, None));
        // Without a backup a miner keeps to its pool.
        let mut alone = Failover::new(false, &Reconnect::default());
        (0..10).for_each(|_| alone.failed());
        assert_eq!((alone.pool(), alone.turned()), (PoolChoice::Primary, None));
    }

    #[tokio::test]
    async fn the_primary_is_checked_every_interval_until_it_answers() {
        let start = std::time::Instant::now();
        let mut asked = 0;
        primary_back(PoolChoice::Backup, Duration::from_millis(40), || {
            asked += 1;
            let answers = asked == 3;
            async move { answers }
        })
        .await;
        assert_eq!(asked, 3);
        // Three intervals at least (a loaded machine may take longer).
        assert!(start.elapsed() >= Duration::from_millis(120));
        // On the primary nothing is checked, and it never resolves.
        let on_primary = primary_back(PoolChoice::Primary, Duration::ZERO, || async { true });
        let waited = tokio::time::timeout(Duration::from_millis(50), on_primary).await;
        assert!(waited.is_err(), "resolved on the primary");
    }

    #[test]
    fn per_miner_values_default_to_alike() {
        let spread = PerMiner {
            hashrate_factor: vec![0.5, 1.5],
            lan_delay_us: vec![250],
        };
        assert_eq!(spread.hashrates(100.0, 3), vec![50.0, 150.0, 100.0]);
        assert_eq!(spread.lan_delay(0), Duration::from_micros(250));
        assert_eq!(spread.lan_delay(1), Duration::ZERO);
        assert_eq!(PerMiner::default().hashrate(10.0, 4), 10.0);
    }
}
