//! The contract between reconcilers: labels and annotations one writes and another reads.
//!
//! - The Subscription reconciler creates InstallPlans carrying [`install_plan`] annotations.
//! - The InstallPlan reconciler creates the CSV carrying [`csv`] annotations and labels, with the
//!   finalizer already set (so no CSV exists, even briefly, without cleanup).
//! - The CSV reconciler writes [`csv::PULL_SECRETS_REPORT`]; the Subscription reconciler mirrors it
//!   into Subscription conditions (one status writer per object, DESIGN invariant 6).
//!
//! Ownership labels of installed objects (`app.kubernetes.io/managed-by`, `opcat.dev/csv`,
//! `opcat.dev/csv-namespace`) are in [`crate::bundle::ownership`]; pull-secret copy labels in
//! [`crate::pull_secrets::names`].

/// Annotations on InstallPlans (written by the Subscription reconciler).
///
/// A plan records its bundles in [`install_plan::BUNDLES`] (see
/// [`crate::controller::plan_record`]). The single-bundle annotations below are how plans of
/// older opcat versions recorded their one bundle; they are read, no longer written.
pub mod install_plan {
    /// Every bundle of the plan, in install order: a JSON list (see
    /// [`crate::controller::plan_record::PlanEntry`]).
    pub const BUNDLES: &str = "opcat.dev/bundles";
    /// The bundle image to install (as the catalog names it; digest-pinned when the catalog
    /// pins it).
    pub const BUNDLE_IMAGE: &str = "opcat.dev/bundle-image";
    /// The bundle (CSV) name.
    pub const BUNDLE_NAME: &str = "opcat.dev/bundle-name";
    /// The package.
    pub const PACKAGE: &str = "opcat.dev/package";
    /// The channel the bundle was resolved from.
    pub const CHANNEL: &str = "opcat.dev/channel";
    /// `namespace/name` of the CatalogSource.
    pub const CATALOG: &str = "opcat.dev/catalog";
    /// The digest of the catalog image the resolution used.
    pub const CATALOG_DIGEST: &str = "opcat.dev/catalog-digest";
    /// The CSV this install replaces (absent for a first install).
    pub const REPLACES: &str = "opcat.dev/replaces";
    /// The Subscription whose resolution created the plan (still written: the Subscription
    /// controller maps plan events to it).
    pub const SUBSCRIPTION: &str = "opcat.dev/subscription";
}

/// Annotations and labels on CSVs opcat creates (written by the InstallPlan reconciler).
pub mod csv {
    /// The bundle image the CSV came from (digest-pinned after the pull).
    pub const BUNDLE_IMAGE: &str = "opcat.dev/bundle-image";
    /// `namespace/name` of the CatalogSource (its `spec.secrets` are the pull credentials).
    pub const CATALOG: &str = "opcat.dev/catalog";
    /// The Subscription (same namespace).
    pub const SUBSCRIPTION: &str = "opcat.dev/subscription";
    /// The InstallPlan that created it.
    pub const INSTALL_PLAN: &str = "opcat.dev/install-plan";
    /// The package.
    pub const PACKAGE: &str = "opcat.dev/package";
    /// The bundle's properties that resolution reads (package, provided and required APIs and
    /// packages, constraints), as OLM records them on the CSVs it installs:
    /// `{"properties":[{"type":...,"value":...}]}`. Later resolutions keep the CSV's
    /// dependencies satisfied from it.
    pub const PROPERTIES: &str = "operatorframework.io/properties";
    /// Label: namespace of the CatalogSource (value hashed if longer than 63).
    pub const CATALOG_NAMESPACE_LABEL: &str = "opcat.dev/catalog-namespace";
    /// Label: name of the CatalogSource (value hashed if longer than 63).
    pub const CATALOG_NAME_LABEL: &str = "opcat.dev/catalog-name";
    /// Written by the CSV reconciler: the pull-secret report for the Subscription, a JSON list of
    /// Subscription conditions (no secret data).
    pub const PULL_SECRETS_REPORT: &str = "opcat.dev/pull-secrets";
}

/// Annotation on every object opcat applies: a hash of the rendered object.
pub const APPLIED_HASH: &str = "opcat.dev/applied-hash";

/// Annotations whose value is (nearly) never the same on two objects: the stored forms keep
/// such values as they are instead of looking them up in their shared strings, whose table
/// entry would cost more than the sharing saves (about 100 bytes per value at 10,000
/// namespaces, an applied hash on each of ~14 objects per install).
pub const UNIQUE_VALUE_ANNOTATIONS: &[&str] =
    &[APPLIED_HASH, csv::INSTALL_PLAN, csv::PULL_SECRETS_REPORT];

/// Splits `namespace/name`.
pub fn split_ref(value: &str) -> Option<(&str, &str)> {
    let (namespace, name) = value.split_once('/')?;
    (!namespace.is_empty() && !name.is_empty()).then_some((namespace, name))
}

#[cfg(test)]
mod tests {
    use super::split_ref;

    #[test]
    fn splits_namespace_and_name() {
        assert_eq!(split_ref("olm/catalog"), Some(("olm", "catalog")));
        assert_eq!(split_ref("catalog"), None);
        assert_eq!(split_ref("/catalog"), None);
    }
}
