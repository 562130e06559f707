//! InstallPlans this process created that the shared InstallPlan store may not list yet.
//!
//! The create is the Subscription reconciler's only non-idempotent write. The store is the source
//! of truth (after a restart it is listed before anything is decided), but between a create's
//! response and the watch event that brings the plan into the store, the next reconcile of the
//! same Subscription must still see it, or it would create a second plan for the same CSV.

use std::collections::HashMap;
use std::sync::Mutex;

use kube::ResourceExt;

use crate::api::InstallPlan;

/// Plans created, by Subscription UID, until the store lists them.
#[derive(Debug, Default)]
pub struct CreatedPlans {
    plans: Mutex<HashMap<String, Vec<InstallPlan>>>,
}

impl CreatedPlans {
    /// Remembers `plan`, created for the Subscription with UID `subscription`.
    pub fn record(&self, subscription: &str, plan: InstallPlan) {
        if let Ok(mut plans) = self.plans.lock() {
            plans.entry(subscription.to_owned()).or_default().push(plan);
        }
    }

    /// The plans created for `subscription` that `listed` (UIDs of the plans in the store) does
    /// not contain yet; the ones it contains are forgotten.
    pub fn unseen(&self, subscription: &str, listed: &[String]) -> Vec<InstallPlan> {
        let Ok(mut plans) = self.plans.lock() else {
            return Vec::new();
        };
        let Some(created) = plans.get_mut(subscription) else {
            return Vec::new();
        };
        created.retain(|plan| plan.uid().is_none_or(|uid| !listed.contains(&uid)));
        let unseen = created.clone();
        if created.is_empty() {
            plans.remove(subscription);
        }
        unseen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(uid: &str) -> InstallPlan {
        let mut plan = InstallPlan::new("install-a", Default::default());
        plan.metadata.uid = Some(uid.into());
        plan
    }

    #[test]
    fn created_plans_are_reported_until_the_store_lists_them() {
        let created = CreatedPlans::default();
        created.record("sub", plan("p1"));
        assert_eq!(created.unseen("sub", &[]).len(), 1);
        assert_eq!(created.unseen("other", &[]).len(), 0);
        assert_eq!(created.unseen("sub", &["p1".to_owned()]).len(), 0);
        assert_eq!(created.unseen("sub", &[]).len(), 0, "forgotten once listed");
    }
}
