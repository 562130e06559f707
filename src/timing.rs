//! Arithmetic on timestamps shared by the controller and the metrics.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

/// Time from `earlier` to `later`, zero if `later` is not after `earlier`.
pub fn elapsed(earlier: Timestamp, later: Timestamp) -> Duration {
    later
        .duration_since(earlier)
        .try_into()
        .unwrap_or(Duration::ZERO)
}

/// What is left of `window` counted from `start` at `now`; `None` once it is over.
pub fn left_of(window: Duration, start: Timestamp, now: Timestamp) -> Option<Duration> {
    window
        .checked_sub(elapsed(start, now))
        .filter(|left| !left.is_zero())
}
