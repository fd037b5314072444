//! Same-tip template refresh: one rule for every template source, so that a difference in
//! template value between sides is a difference in the protocols, not in refresh timing.
//!
//! The rule: a new template on the same tip is due `interval` after the later of the last
//! new tip and the last template sent; when due, it is sent only if the mempool moved and
//! its fees grew by at least `fee_threshold_sats`. Both a new tip and a template sent
//! restart the timer; once due, the first template worth sending goes out. The SV1 pool's getblocktemplate polling and the node's Template
//! Provider follow it through [`RefreshTimer`].

use std::time::Duration;
use tokio::time::Instant;

/// How soon a due refresh that found nothing worth sending looks again.
pub const RECHECK: Duration = Duration::from_secs(1);

/// How often, and for how much more in fees, a template on the same tip is replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefreshPolicy {
    pub interval: Duration,
    pub fee_threshold_sats: u64,
}

impl RefreshPolicy {
    /// Whether a candidate with `candidate_fees` is worth sending over the template sent
    /// with `sent_fees` on the same tip.
    pub fn worth_sending(&self, sent_fees: u64, candidate_fees: u64) -> bool {
        candidate_fees >= sent_fees.saturating_add(self.fee_threshold_sats)
    }
}

/// When the next same-tip refresh is due for one consumer (a pool, a TDP connection).
#[derive(Debug, Clone)]
pub struct RefreshTimer {
    policy: RefreshPolicy,
    due: Instant,
}

impl RefreshTimer {
    /// A timer started now, as if a template had just been sent.
    pub fn start(policy: RefreshPolicy, now: Instant) -> RefreshTimer {
        RefreshTimer {
            policy,
            due: now + policy.interval,
        }
    }

    pub fn policy(&self) -> RefreshPolicy {
        self.policy
    }

    /// When the next same-tip template is due.
    pub fn due(&self) -> Instant {
        self.due
    }

    /// A new tip or a template sent at `now`: the next refresh is a whole interval away.
    pub fn restart(&mut self, now: Instant) {
        self.due = now + self.policy.interval;
    }

    /// A refresh was due but nothing was worth sending (the mempool did not move, or fees
    /// did not grow enough): look again shortly, as Bitcoin Core's waitNext does, so the
    /// first template worth sending after the interval goes out.
    pub fn recheck(&mut self, now: Instant) {
        self.due = now + RECHECK;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: RefreshPolicy = RefreshPolicy {
        interval: Duration::from_secs(30),
        fee_threshold_sats: 1_000,
    };

    #[test]
    fn a_new_tip_and_a_template_sent_both_restart_the_timer() {
        let t0 = Instant::now();
        let mut timer = RefreshTimer::start(POLICY, t0);
        assert_eq!(timer.due(), t0 + Duration::from_secs(30));
        // A new tip 20 s in: the refresh that was due at 30 s moves to 50 s.
        timer.restart(t0 + Duration::from_secs(20));
        assert_eq!(timer.due(), t0 + Duration::from_secs(50));
        // A template sent at 50 s: the next one at 80 s.
        timer.restart(t0 + Duration::from_secs(50));
        assert_eq!(timer.due(), t0 + Duration::from_secs(80));
        // Due, but nothing worth sending: look again a second later.
        timer.recheck(t0 + Duration::from_secs(80));
        assert_eq!(timer.due(), t0 + Duration::from_secs(81));
    }

    #[test]
    fn only_a_fee_gain_of_the_threshold_is_worth_sending() {
        assert!(!POLICY.worth_sending(10_000, 10_999));
        assert!(POLICY.worth_sending(10_000, 11_000));
        assert!(!POLICY.worth_sending(u64::MAX - 5, u64::MAX - 5));
    }
}
