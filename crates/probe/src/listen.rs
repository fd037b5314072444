//! Accepting connections without spinning: every role's listener goes through here.

use std::future::Future;
use std::time::Duration;

/// How long a listener waits after a failed accept before it tries again.
pub const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// The next connection `accept` yields. A failed accept (out of file descriptors, say,
/// under a flood of connections) is logged with `listener` and waited out for
/// [`ACCEPT_RETRY`]: retried at once, it would fail again at once and spin a core for as
/// long as the condition lasts, starving the connections already served.
pub async fn accept_next<T, F, Fut>(listener: &str, mut accept: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::io::Result<T>>,
{
    loop {
        match accept().await {
            Ok(accepted) => return accepted,
            Err(e) => {
                tracing::warn!(error = %e, listener, "accept failed; retrying shortly");
                tokio::time::sleep(ACCEPT_RETRY).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failed_accept_is_waited_out_not_spun_on() {
        let mut attempts = 0;
        let started = std::time::Instant::now();
        let got = accept_next("test", || {
            attempts += 1;
            let result = if attempts <= 2 {
                Err(std::io::Error::from_raw_os_error(libc::EMFILE))
            } else {
                Ok(attempts)
            };
            async move { result }
        })
        .await;
        assert_eq!(got, 3, "two failures, then the connection");
        assert!(
            started.elapsed() >= 2 * ACCEPT_RETRY,
            "each failure waits: {:?}",
            started.elapsed()
        );
    }
}
