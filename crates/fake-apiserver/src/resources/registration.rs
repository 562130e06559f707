//! The kinds that register webhooks and API services, with the list semantics of their
//! `k8s.io/api` markers:
//!
//! * `admissionregistration.k8s.io/v1` Validating/MutatingWebhookConfiguration
//!   (`staging/src/k8s.io/api/admissionregistration/v1/types.go`): `webhooks` is
//!   `+listType=map +listMapKey=name` with `+patchMergeKey=name +patchStrategy=merge`;
//!   `rules` and `admissionReviewVersions` are atomic; `matchConditions` is a map list keyed by
//!   `name`; label selectors have granular `matchLabels` and atomic `matchExpressions`. The
//!   strategies (`pkg/registry/admissionregistration/*/strategy.go`) set `generation` to 1 on
//!   create and bump it when `webhooks` changes.
//! * `apiregistration.k8s.io/v1` APIService
//!   (`staging/src/k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/types.go`), with a
//!   `status` subresource whose `conditions` are a map list keyed by `type`; no generation.
//!
//! All three are in the `api-extensions` category, as their REST storages say.

use super::builtin::{Spec, base, conditions, plain};
use crate::schema::Schema;

/// `Categories()` of the webhook configuration, APIService and CRD storages.
pub(super) const API_EXTENSIONS: &[&str] = &["api-extensions"];

fn label_selector(root: &mut Schema, path: &str) {
    root.set(&format!("{path}.matchLabels"), Schema::string_map());
    root.set(&format!("{path}.matchExpressions"), Schema::atomic_list());
}

fn webhook_configuration() -> Schema {
    let mut s = base();
    s.set("webhooks", Schema::map_list(&["name"]));
    s.set_all(
        "webhooks[]",
        &[
            ("rules", Schema::atomic_list()),
            ("admissionReviewVersions", Schema::atomic_list()),
            ("matchConditions", Schema::map_list(&["name"])),
        ],
    );
    label_selector(&mut s, "webhooks[].namespaceSelector");
    label_selector(&mut s, "webhooks[].objectSelector");
    s
}

fn api_service() -> Schema {
    let mut s = base();
    conditions(&mut s);
    s
}

/// The specs of the three kinds.
pub(super) fn specs() -> Vec<Spec> {
    let group = "admissionregistration.k8s.io";
    let webhooks = |kind, plural| Spec {
        tracks_generation: true,
        categories: API_EXTENSIONS,
        schema: webhook_configuration,
        ..plain(group, "v1", kind, plural, &[], false)
    };
    vec![
        webhooks(
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        ),
        webhooks(
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
        ),
        Spec {
            has_status: true,
            categories: API_EXTENSIONS,
            schema: api_service,
            ..plain(
                "apiregistration.k8s.io",
                "v1",
                "APIService",
                "apiservices",
                &[],
                false,
            )
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ListKind;

    #[test]
    fn webhooks_merge_by_name_and_rules_are_atomic() {
        let s = webhook_configuration();
        let hooks = s.field("webhooks");
        assert!(matches!(hooks.list_kind(), ListKind::Map { keys, .. } if keys == &["name"]));
        assert_eq!(hooks.items().field("rules").list_kind(), &ListKind::Atomic);
        let labels = hooks
            .items()
            .field("namespaceSelector")
            .field("matchLabels");
        assert!(!labels.is_named_field("team"));
    }
}
