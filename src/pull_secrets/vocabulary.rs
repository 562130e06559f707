//! The words opcat uses to report propagation: condition types and reasons, event reasons
//! (metric names are in [`crate::metrics`]). Conditions follow the Kubernetes convention: `type`,
//! `status` (`True`/`False`), a CamelCase `reason`, a human `message` that never holds secret
//! data.

/// Condition on a Subscription: a Secret that is not opcat's holds a copy's name. `True` is the
/// abnormal state (like OLM's `ResolutionFailed`).
pub const CONDITION_PULL_SECRET_CONFLICT: &str = "PullSecretConflict";
/// Condition on a Subscription: the catalog's pull secrets are not copied into its namespace.
pub const CONDITION_PULL_SECRETS_NOT_PROPAGATED: &str = "PullSecretsNotPropagated";
/// Condition on a CatalogSource and its Subscriptions: a Secret in `spec.secrets` is missing or
/// not a pull secret.
pub const CONDITION_PULL_SECRET_SOURCE_MISSING: &str = "PullSecretSourceMissing";
/// Condition on a Subscription: every image of the bundle resolves with the propagated
/// credentials (preflight). `True` is the normal state.
pub const CONDITION_PULL_CREDENTIALS_READY: &str = "PullCredentialsReady";

/// Condition on a Subscription: what the copies hold, per source secret (registry keys only),
/// and which sources were left out because no image needs them. `True` when copies are scoped
/// to the operators' images (DESIGN invariant 12), `False` when the CatalogSource opted out.
pub const CONDITION_PULL_SECRETS_SCOPED: &str = "PullSecretsScoped";

/// `PullSecretsScoped=True`.
pub const REASON_SCOPED_TO_IMAGES: &str = "ScopedToImages";
/// `PullSecretsScoped=False`: the CatalogSource's `opcat.dev/pull-secret-scope: whole`.
pub const REASON_WHOLE_SECRETS_COPIED: &str = "WholeSecretsCopied";
/// `PullSecretConflict=True`: a foreign Secret holds the name.
pub const REASON_SECRET_NAME_IN_USE: &str = "SecretNameInUse";
/// `PullSecretConflict=False`.
pub const REASON_NO_CONFLICT: &str = "NoConflict";
/// `PullSecretsNotPropagated=True`: the namespace opted out.
pub const REASON_NAMESPACE_OPTED_OUT: &str = "NamespaceOptedOut";
/// `PullSecretsNotPropagated=True`: the catalog's selector does not select the namespace.
pub const REASON_NAMESPACE_NOT_SELECTED: &str = "NamespaceNotSelected";
/// `PullSecretsNotPropagated=True`: the catalog's selector annotation is invalid.
pub const REASON_INVALID_PROPAGATION_SELECTOR: &str = "InvalidPropagationSelector";
/// `PullSecretsNotPropagated=False`.
pub const REASON_PROPAGATED: &str = "Propagated";
/// `PullSecretSourceMissing=True`: a named Secret does not exist.
pub const REASON_SOURCE_NOT_FOUND: &str = "SourceSecretNotFound";
/// `PullSecretSourceMissing=True`: a named Secret is not a usable pull secret (and none is
/// missing).
pub const REASON_SOURCE_INVALID: &str = "SourceSecretInvalid";
/// `PullSecretSourceMissing=False`.
pub const REASON_SOURCES_PRESENT: &str = "SourceSecretsPresent";
/// `PullCredentialsReady=True`.
pub const REASON_IMAGES_RESOLVABLE: &str = "ImagesResolvable";
/// `PullCredentialsReady=False`: a registry answered 401.
pub const REASON_UNAUTHORIZED: &str = "Unauthorized";
/// `PullCredentialsReady=False`: a registry answered 403.
pub const REASON_FORBIDDEN: &str = "Forbidden";
/// `PullCredentialsReady=False`: a registry answered 404.
pub const REASON_IMAGE_NOT_FOUND: &str = "ImageNotFound";
/// `PullCredentialsReady=False`: another error (5xx, timeout, TLS ...).
pub const REASON_REGISTRY_ERROR: &str = "RegistryError";
/// `PullCredentialsReady=False`: failures of more than one kind.
pub const REASON_MULTIPLE_FAILURES: &str = "MultipleFailures";

/// Event: a copy was created.
pub const EVENT_PULL_SECRET_COPIED: &str = "PullSecretCopied";
/// Event: copies were appended to a ServiceAccount.
pub const EVENT_PULL_SECRET_ATTACHED: &str = "PullSecretAttached";
/// Event: a copy's data was updated from a rotated source (or recreated after a type change).
pub const EVENT_PULL_SECRET_ROTATED: &str = "PullSecretRotated";
/// Event: copies were removed from a ServiceAccount.
pub const EVENT_PULL_SECRET_DETACHED: &str = "PullSecretDetached";
/// Event: a copy was deleted.
pub const EVENT_PULL_SECRET_DELETED: &str = "PullSecretDeleted";
/// Warning event: a copy or a ServiceAccount entry someone else changed or removed was restored.
pub const EVENT_PULL_SECRET_RESTORED: &str = "PullSecretRestored";
/// Warning event: opcat stopped restoring ServiceAccount entries another writer keeps removing.
pub const EVENT_PULL_SECRET_RESTORE_WITHHELD: &str = "PullSecretRestoreWithheld";
/// Warning event: a foreign Secret holds a copy's name.
pub const EVENT_PULL_SECRET_CONFLICT: &str = "PullSecretConflict";

/// Longest condition message opcat writes (the API allows 32768; a status meant for humans
/// stays short and a long list ends with "and N more").
pub const MAX_MESSAGE_LEN: usize = 1024;

/// `True` or `False`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionStatus {
    True,
    False,
}

impl ConditionStatus {
    /// `"True"` or `"False"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
        }
    }
}

/// A condition to set on a status, without the timestamps and generation the status writer adds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullSecretCondition {
    /// Condition type (one of the `CONDITION_*` constants).
    pub type_: &'static str,
    /// Status.
    pub status: ConditionStatus,
    /// CamelCase reason (one of the `REASON_*` constants).
    pub reason: &'static str,
    /// Human-readable, bounded, free of secret data.
    pub message: String,
}

/// `lead` followed by `items` joined with `"; "`, at most `max` bytes: items that do not fit
/// become `"and N more"`. Deterministic for the same input order.
pub fn bounded_list(lead: &str, items: &[String], max: usize) -> String {
    let mut message = lead.to_owned();
    for (index, item) in items.iter().enumerate() {
        let separator = if index == 0 { "" } else { "; " };
        let after = items.len() - index - 1;
        let reserve = if after == 0 {
            0
        } else {
            format!("; and {after} more").len()
        };
        if message.len() + separator.len() + item.len() + reserve > max {
            message.push_str(separator);
            message.push_str(&format!("and {} more", items.len() - index));
            return message;
        }
        message.push_str(separator);
        message.push_str(item);
    }
    message
}
