//! Every phase each ClusterServiceVersion in the test namespace passes through, from a watch
//! opened before the test acts. An automatic upgrade replaces and deletes the old CSV on its own
//! schedule, so polling for the old CSV's phase races the controller; the watch does not.

use std::sync::{Arc, Mutex};

use kube::ResourceExt;
use opcat::api::ClusterServiceVersion;

use super::{NAMESPACE, TIMEOUT};
use crate::support::Env;

/// Records every state of the CSVs in watch order.
pub struct CsvPhases {
    seen: Arc<Mutex<Vec<ClusterServiceVersion>>>,
}

impl CsvPhases {
    /// Opens the watch and returns once the API server has registered it.
    pub async fn start(env: &Env) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        env.record_watch(NAMESPACE, move |csv: ClusterServiceVersion| {
            sink.lock().unwrap().push(csv);
        })
        .await;
        Self { seen }
    }

    /// Names and phases observed so far, in order (`None` before the reconciler set a phase).
    pub fn seen(&self) -> Vec<(String, Option<&'static str>)> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|csv| (csv.name_any(), phase_of(csv)))
            .collect()
    }

    /// Position of the first observation of `csv` (in `phase`, when given).
    pub fn first(&self, csv: &str, phase: Option<&str>) -> Option<usize> {
        self.seen.lock().unwrap().iter().position(|seen| {
            seen.name_any() == csv && phase.is_none_or(|phase| phase_of(seen) == Some(phase))
        })
    }

    /// `csv` as first observed.
    pub fn first_seen(&self, csv: &str) -> Option<ClusterServiceVersion> {
        let seen = self.seen.lock().unwrap();
        seen.iter().find(|seen| seen.name_any() == csv).cloned()
    }

    /// Asserts `csv` was observed in `Succeeded` before `next` was first observed at all: the
    /// upgrade to `next` waited for `csv` to finish installing.
    pub async fn assert_succeeded_before(&self, env: &Env, csv: &str, next: &str) {
        env.wait_until(&format!("the watch saw {next}"), TIMEOUT, || {
            self.first(next, None).is_some()
        })
        .await;
        let succeeded = self.first(csv, Some("Succeeded"));
        let created = self.first(next, None);
        assert!(
            succeeded.is_some() && succeeded < created,
            "{csv} must reach Succeeded before {next} exists; observed: {:?}",
            self.seen()
        );
    }
}

fn phase_of(csv: &ClusterServiceVersion) -> Option<&'static str> {
    csv.status
        .as_ref()
        .and_then(|status| status.phase)
        .map(|phase| phase.as_str())
}
