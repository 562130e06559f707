//! Pure: what an InstallPlan installs, bundle by bundle (no client). The Subscription reconciler
//! writes it when it creates the plan; the InstallPlan reconciler and every Subscription the
//! plan serves read it.
//!
//! A plan lists its CSVs in `spec.clusterServiceVersionNames`, dependencies first and the
//! resolving Subscription's own CSV last (OLM's field). opcat records, per CSV, where its
//! bundle comes from in the annotation [`BUNDLES`]: a JSON list of [`PlanEntry`], in the same
//! order. An annotation, not the status: the status has one writer, the InstallPlan reconciler,
//! which mirrors the record into OLM's `status.bundleLookups` while it pulls.
//!
//! Plans written before dependencies were resolved hold one bundle in single-value annotations
//! ([`keys::install_plan`]); [`entries`] reads both.

use std::collections::BTreeMap;

use kube::ResourceExt;
use serde::{Deserialize, Serialize};

use crate::api::InstallPlan;
use crate::controller::keys::{self, install_plan as legacy};
use crate::fbc::property::{Property, RawProperty, parse_all, types};

/// Annotation on InstallPlans: the JSON list of [`PlanEntry`].
pub const BUNDLES: &str = keys::install_plan::BUNDLES;

/// Property types recorded per bundle: what resolution reads (the bundle's package and
/// version, the APIs it provides, and what it requires). Bundle objects and CSV metadata are
/// left out: they are large and the bundle image has them.
pub const RECORDED_PROPERTY_TYPES: [&str; 5] = [
    types::PACKAGE,
    types::GVK,
    types::PACKAGE_REQUIRED,
    types::GVK_REQUIRED,
    CONSTRAINT,
];

/// `olm.constraint` (the FBC model keeps it as an unknown property type).
const CONSTRAINT: &str = "olm.constraint";

/// One bundle of a plan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanEntry {
    /// The CSV (bundle) name.
    pub name: String,
    /// Its package.
    pub package: String,
    /// The channel it was resolved from.
    pub channel: String,
    /// Its version (empty when unknown: plans of older opcat versions).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The bundle image as the catalog names it.
    pub image: String,
    /// Namespace of the CatalogSource it comes from (whose `spec.secrets` pull it).
    pub catalog_namespace: String,
    /// Name of that CatalogSource.
    pub catalog_name: String,
    /// Digest of the catalog image the resolution read.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub catalog_digest: String,
    /// The installed CSV it replaces, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// The Subscription (same namespace) the CSV belongs to.
    pub subscription: String,
    /// For a dependency: the CSV whose requirement brought it in, and the requirement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_by: Option<RequiredBy>,
    /// The catalog bundle's [`RECORDED_PROPERTY_TYPES`] properties (`{type, value}`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<serde_json::Value>,
}

/// Why a dependency is in a plan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequiredBy {
    /// The CSV that requires it.
    pub csv: String,
    /// The requirement in words ("requires package etcd >=0.9.0").
    pub requirement: String,
}

impl PlanEntry {
    /// `namespace/name` of the CatalogSource.
    pub fn catalog(&self) -> String {
        format!("{}/{}", self.catalog_namespace, self.catalog_name)
    }

    /// The recorded properties, typed.
    pub fn typed_properties(&self) -> Result<Vec<Property>, String> {
        parse_properties(&self.properties)
    }
}

/// Why a plan's record cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanRecordError {
    /// The annotation is not a list of bundles.
    #[error("InstallPlan annotation {BUNDLES} is not a JSON list of bundles: {0}")]
    Malformed(String),
    /// The annotation and `spec.clusterServiceVersionNames` disagree.
    #[error(
        "InstallPlan annotation {BUNDLES} lists {recorded:?}, but spec.clusterServiceVersionNames \
         lists {listed:?}"
    )]
    Mismatch {
        recorded: Vec<String>,
        listed: Vec<String>,
    },
}

/// The annotation value for `entries`.
pub fn encode(entries: &[PlanEntry]) -> String {
    // Serialising plain strings and JSON values cannot fail.
    serde_json::to_string(entries).unwrap_or_default()
}

/// The bundles `plan` installs, in install order.
pub fn entries(plan: &InstallPlan) -> Result<Vec<PlanEntry>, PlanRecordError> {
    let listed = &plan.spec.cluster_service_version_names;
    let annotations = plan.annotations();
    let Some(text) = annotations.get(BUNDLES) else {
        return Ok(legacy_entry(plan, annotations).into_iter().collect());
    };
    let entries: Vec<PlanEntry> = serde_json::from_str(text)
        .map_err(|error| PlanRecordError::Malformed(error.to_string()))?;
    let recorded: Vec<String> = entries.iter().map(|entry| entry.name.clone()).collect();
    if &recorded != listed {
        return Err(PlanRecordError::Mismatch {
            recorded,
            listed: listed.clone(),
        });
    }
    Ok(entries)
}

/// The CSV `plan` installs for the Subscription `subscription`: the entry recorded for it; in a
/// single-bundle plan of an older opcat, its only CSV.
pub fn csv_for(plan: &InstallPlan, subscription: &str) -> Option<String> {
    if plan.annotations().contains_key(BUNDLES) {
        return entries(plan).ok().and_then(|entries| {
            entries
                .into_iter()
                .find(|entry| entry.subscription == subscription)
                .map(|entry| entry.name)
        });
    }
    plan.spec.cluster_service_version_names.first().cloned()
}

/// `(namespace, name)` of every CatalogSource a plan installs from, without repeats, in plan
/// order. An unreadable record falls back to `spec.source`/`sourceNamespace`.
pub fn catalogs(plan: &InstallPlan) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    match entries(plan) {
        Ok(entries) if !entries.is_empty() => {
            for entry in entries {
                let key = (entry.catalog_namespace, entry.catalog_name);
                if !found.contains(&key) {
                    found.push(key);
                }
            }
        }
        _ => found.extend(
            plan.spec
                .source_namespace
                .clone()
                .zip(plan.spec.source.clone()),
        ),
    }
    found
}

/// The single bundle of a plan written by an older opcat (its annotations), if it names one.
fn legacy_entry(plan: &InstallPlan, annotations: &BTreeMap<String, String>) -> Option<PlanEntry> {
    let get = |key: &str| annotations.get(key).cloned().unwrap_or_default();
    let name = annotations
        .get(legacy::BUNDLE_NAME)
        .or_else(|| plan.spec.cluster_service_version_names.first())?
        .clone();
    let (catalog_namespace, catalog_name) = annotations
        .get(legacy::CATALOG)
        .and_then(|value| keys::split_ref(value))
        .map(|(namespace, name)| (namespace.to_owned(), name.to_owned()))
        .or_else(|| {
            plan.spec
                .source_namespace
                .clone()
                .zip(plan.spec.source.clone())
        })
        .unwrap_or_default();
    Some(PlanEntry {
        name,
        package: get(legacy::PACKAGE),
        channel: get(legacy::CHANNEL),
        version: String::new(),
        image: get(legacy::BUNDLE_IMAGE),
        catalog_namespace,
        catalog_name,
        catalog_digest: get(legacy::CATALOG_DIGEST),
        replaces: annotations
            .get(legacy::REPLACES)
            .filter(|replaces| !replaces.is_empty())
            .cloned(),
        subscription: get(legacy::SUBSCRIPTION),
        required_by: None,
        properties: Vec::new(),
    })
}

/// The properties of `properties` whose type resolution reads, as JSON values, sorted by type
/// and value (as `opm render` orders them), without repeats.
pub fn recorded_properties<'a>(
    properties: impl IntoIterator<Item = &'a Property>,
) -> Vec<serde_json::Value> {
    let mut recorded: Vec<(String, serde_json::Value)> = properties
        .into_iter()
        .filter(|property| RECORDED_PROPERTY_TYPES.contains(&property.type_name()))
        .filter_map(|property| serde_json::to_value(property).ok())
        .map(|value| (value.to_string(), value))
        .collect();
    recorded.sort_by(|a, b| {
        (a.1.get("type").map(ToString::to_string), &a.0)
            .cmp(&(b.1.get("type").map(ToString::to_string), &b.0))
    });
    recorded.dedup_by(|a, b| a.0 == b.0);
    recorded.into_iter().map(|(_, value)| value).collect()
}

/// Types `{type, value}` JSON properties; errors name the index and type.
pub fn parse_properties(values: &[serde_json::Value]) -> Result<Vec<Property>, String> {
    let text = serde_json::to_string(values).map_err(|error| error.to_string())?;
    let raw: Vec<RawProperty<'_>> =
        serde_json::from_str(&text).map_err(|error| error.to_string())?;
    parse_all(raw)
}

#[cfg(test)]
#[path = "plan_record_tests.rs"]
mod tests;
