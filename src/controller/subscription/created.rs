//! InstallPlans this process created that the shared InstallPlan store may not list yet, and
//! the lock that makes one namespace's resolutions take turns.
//!
//! The create is the Subscription reconciler's only non-idempotent write. The store is the source
//! of truth (after a restart it is listed before anything is decided), but between a create's
//! response and the watch event that brings the plan into the store, the next reconcile of any
//! Subscription of the namespace must still see it: the same Subscription would create a second
//! plan for the same CSV, and a dependency's Subscription (created just before the plan that
//! serves it) would resolve on its own. Plans are remembered per namespace; each Subscription
//! picks its own by owner reference.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::ResourceExt;

use crate::api::InstallPlan;

/// Plans created, by namespace, until the store lists them.
#[derive(Debug, Default)]
pub struct CreatedPlans {
    plans: Mutex<HashMap<String, Vec<InstallPlan>>>,
}

impl CreatedPlans {
    /// Remembers `plan`, created in its namespace.
    pub fn record(&self, plan: InstallPlan) {
        let namespace = plan.namespace().unwrap_or_default();
        if let Ok(mut plans) = self.plans.lock() {
            plans.entry(namespace).or_default().push(plan);
        }
    }

    /// The plans created in `namespace` that `listed` (UIDs of the plans in the store) does not
    /// contain yet; the ones it contains are forgotten.
    pub fn unseen(&self, namespace: &str, listed: &[String]) -> Vec<InstallPlan> {
        let Ok(mut plans) = self.plans.lock() else {
            return Vec::new();
        };
        let Some(created) = plans.get_mut(namespace) else {
            return Vec::new();
        };
        created.retain(|plan| plan.uid().is_none_or(|uid| !listed.contains(&uid)));
        let unseen = created.clone();
        if created.is_empty() {
            plans.remove(namespace);
        }
        unseen
    }
}

/// One lock per namespace: a namespace's Subscriptions resolve one at a time (as OLM resolves a
/// namespace as a whole), so a dependency's Subscription never resolves between its creation
/// and the creation of the plan that serves it, and two Subscriptions needing the same
/// dependency do not plan it twice.
#[derive(Debug, Default)]
pub struct NamespaceLocks {
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl NamespaceLocks {
    /// The lock of `namespace` (one small entry per namespace with Subscriptions).
    pub fn of(&self, namespace: &str) -> Arc<tokio::sync::Mutex<()>> {
        match self.locks.lock() {
            Ok(mut locks) => locks.entry(namespace.to_owned()).or_default().clone(),
            // A poisoned map: a fresh lock each time is no worse than no lock.
            Err(_) => Arc::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(namespace: &str, uid: &str) -> InstallPlan {
        let mut plan = InstallPlan::new("install-a", Default::default());
        plan.metadata.namespace = Some(namespace.into());
        plan.metadata.uid = Some(uid.into());
        plan
    }

    #[test]
    fn created_plans_are_reported_until_the_store_lists_them() {
        let created = CreatedPlans::default();
        created.record(plan("ops", "p1"));
        assert_eq!(created.unseen("ops", &[]).len(), 1);
        assert_eq!(created.unseen("other", &[]).len(), 0);
        assert_eq!(created.unseen("ops", &["p1".to_owned()]).len(), 0);
        assert_eq!(created.unseen("ops", &[]).len(), 0, "forgotten once listed");
    }

    #[tokio::test]
    async fn a_namespace_has_one_lock() {
        let locks = NamespaceLocks::default();
        let held = locks.of("ops");
        let _guard = held.lock().await;
        assert!(locks.of("ops").try_lock().is_err());
        assert!(locks.of("other").try_lock().is_ok());
    }
}
