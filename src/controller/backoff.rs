//! Failure handling shared by every reconciler.
//!
//! DESIGN invariant 7: an expected wait is a condition plus a fixed requeue (the reconciler
//! returns `Ok(Action::requeue(..))` itself); only failures reach the error policy. Transient
//! failures (API conflicts and 5xx, registry timeouts) back off exponentially per object; the
//! counter resets on the next success. Terminal failures never retry hot.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use kube::runtime::controller::Action;

use crate::failure::ReconcileFailure;

/// Per-object failure counters.
#[derive(Debug, Default)]
pub struct Backoffs {
    attempts: Mutex<HashMap<String, u32>>,
}

/// First retry delay for a transient failure.
pub const BASE_DELAY: Duration = Duration::from_millis(500);
/// Longest delay between retries of a transient failure.
pub const MAX_DELAY: Duration = Duration::from_secs(300);
/// Retry interval after a terminal failure (a spec or content change usually fixes it first,
/// and triggers a reconcile on its own).
pub const TERMINAL_DELAY: Duration = Duration::from_secs(600);

impl Backoffs {
    /// Records a failure of `key` and returns how long to wait.
    pub fn failed(&self, key: &str, transient: bool) -> Duration {
        if !transient {
            return TERMINAL_DELAY;
        }
        let attempt = match self.attempts.lock() {
            Ok(mut attempts) => {
                let count = attempts.entry(key.to_owned()).or_insert(0);
                *count = count.saturating_add(1);
                *count
            }
            Err(_) => 1,
        };
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(20));
        BASE_DELAY.saturating_mul(factor).min(MAX_DELAY)
    }

    /// Forgets failures of `key` after a success.
    pub fn succeeded(&self, key: &str) {
        if let Ok(mut attempts) = self.attempts.lock() {
            attempts.remove(key);
        }
    }

    /// The error policy: log, count, and requeue after the backoff delay.
    pub fn policy<E: ReconcileFailure>(&self, controller: &str, key: &str, error: &E) -> Action {
        let delay = self.failed(key, error.is_transient());
        tracing::warn!(
            controller,
            object = key,
            error_kind = error.kind(),
            retry_in_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error = %crate::failure::error_chain(error),
            "reconcile failed"
        );
        Action::requeue(delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_failures_back_off_exponentially_and_reset_on_success() {
        let backoffs = Backoffs::default();
        assert_eq!(backoffs.failed("a", true), Duration::from_millis(500));
        assert_eq!(backoffs.failed("a", true), Duration::from_secs(1));
        assert_eq!(backoffs.failed("a", true), Duration::from_secs(2));
        assert_eq!(backoffs.failed("b", true), Duration::from_millis(500));
        for _ in 0..30 {
            backoffs.failed("a", true);
        }
        assert_eq!(backoffs.failed("a", true), MAX_DELAY);
        backoffs.succeeded("a");
        assert_eq!(backoffs.failed("a", true), Duration::from_millis(500));
    }

    #[test]
    fn terminal_failures_never_retry_hot() {
        let backoffs = Backoffs::default();
        assert_eq!(backoffs.failed("a", false), TERMINAL_DELAY);
        assert_eq!(backoffs.failed("a", false), TERMINAL_DELAY);
    }
}
