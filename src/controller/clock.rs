//! Time, injected: reconcilers never call `now()` themselves, so tests control the clock.

use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// A source of the current time.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock tests move by hand.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<Timestamp>,
}

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        Self {
            now: Mutex::new(start),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        if let Ok(mut now) = self.now.lock()
            && let Ok(by) = SignedDuration::try_from(by)
            && let Ok(later) = now.checked_add(by)
        {
            *now = later;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        self.now
            .lock()
            .map(|now| *now)
            .unwrap_or_else(|poisoned| *poisoned.into_inner())
    }
}

/// `now` as a status timestamp: whole seconds, because `metav1.Time` is serialized with second
/// precision. A status built with it equals the same status read back from the API, so the
/// "unchanged, skip the write" comparison holds (DESIGN invariant 5).
pub fn status_time(now: Timestamp) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    let whole = Timestamp::from_second(now.as_second()).unwrap_or(now);
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(whole)
}
