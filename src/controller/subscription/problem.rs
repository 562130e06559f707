//! Pure: the dependency-resolution problem of one Subscription (no client): what it asks for,
//! every catalog its namespace sees with its `spec.priority`, and the operators installed in
//! the namespace.

use kube::ResourceExt;

use super::decide::Inputs;
use crate::api::ClusterServiceVersion;
use crate::controller::installed_operators::installed_operators;
use crate::dependency::{CatalogId, Problem, SubscriptionRequest, VisibleCatalog};

/// The problem [`crate::dependency::solve`] solves for `inputs.subscription`, whose installed CSV
/// is `installed`. Catalogs that are not loaded are left out.
pub fn problem<'a>(inputs: &Inputs<'a>, installed: Option<&ClusterServiceVersion>) -> Problem<'a> {
    let subscription = inputs.subscription;
    let spec = &subscription.spec;
    let catalogs = inputs
        .catalogs
        .iter()
        .filter_map(|seen| {
            let loaded = seen.loaded?;
            Some(VisibleCatalog {
                id: CatalogId::new(
                    seen.source.namespace().unwrap_or_default(),
                    seen.source.name_any(),
                ),
                priority: priority(seen.source.spec.priority),
                catalog: &loaded.catalog,
            })
        })
        .collect();
    Problem {
        namespace: subscription
            .metadata
            .namespace
            .as_deref()
            .unwrap_or_default(),
        subscription: SubscriptionRequest {
            name: subscription.name_any(),
            package: spec.package.clone(),
            channel: spec.channel().map(str::to_owned),
            starting_csv: spec.starting_csv.clone(),
            catalog: CatalogId::new(&spec.catalog_source_namespace, &spec.catalog_source),
            installed: installed.and_then(|csv| csv.metadata.name.clone()),
            installed_version: installed
                .and_then(|csv| csv.spec.version.as_deref())
                .and_then(|version| semver::Version::parse(version.trim_start_matches('v')).ok()),
        },
        catalogs,
        installed: installed_operators(inputs.csvs),
    }
}

/// `spec.priority` (a Go `int`) as the solver's `i32`, saturating.
fn priority(value: Option<i64>) -> i32 {
    let value = value.unwrap_or(0);
    i32::try_from(value).unwrap_or(if value < 0 { i32::MIN } else { i32::MAX })
}
