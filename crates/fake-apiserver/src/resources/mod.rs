//! What the server knows about each resource: names, scope, subresources, how `generation`
//! moves, which field selectors it accepts and the schema used by SMP and SSA. Builtin kinds
//! come from a static table; custom resources from their CustomResourceDefinition.

pub(crate) mod builtin;
pub(crate) mod crd;
mod registration;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::schema::Schema;
use crate::status::GroupResource;

/// Identity of a resource: API group and plural name (storage is shared by all versions).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ResourceKey {
    pub(crate) group: String,
    pub(crate) plural: String,
}

/// Everything the handlers need to know about one resource.
#[derive(Clone, Debug)]
pub(crate) struct ResourceInfo {
    pub(crate) group: String,
    /// Served versions, preferred first.
    pub(crate) versions: Vec<String>,
    pub(crate) kind: String,
    pub(crate) plural: String,
    pub(crate) singular: String,
    pub(crate) short_names: Vec<String>,
    pub(crate) categories: Vec<String>,
    pub(crate) namespaced: bool,
    /// Has a `/status` subresource (writes to the main resource ignore `status`).
    pub(crate) has_status: bool,
    /// Maintains `metadata.generation` (bumped when anything but metadata/status changes).
    pub(crate) tracks_generation: bool,
    /// Builtin kinds: list items omit `kind`/`apiVersion`, delete answers with a `Status`,
    /// strategic merge patch is accepted, unconditional updates are allowed.
    pub(crate) builtin: bool,
    /// Field labels accepted in `fieldSelector`.
    pub(crate) field_labels: Vec<&'static str>,
    /// Only `create` is served and nothing is stored: the review kinds of
    /// `authorization.k8s.io` and `authentication.k8s.io` ([`crate::auth::reviews`]).
    pub(crate) create_only: bool,
    pub(crate) schema: Arc<Schema>,
}

impl ResourceInfo {
    pub(crate) fn key(&self) -> ResourceKey {
        ResourceKey {
            group: self.group.clone(),
            plural: self.plural.clone(),
        }
    }

    pub(crate) fn group_resource(&self) -> GroupResource<'_> {
        GroupResource {
            group: &self.group,
            resource: &self.plural,
        }
    }

    /// `apiVersion` for `version`.
    pub(crate) fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    pub(crate) fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v == version)
    }
}

/// Registered resources by group/version/plural, plus kind lookups for owner references.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    resources: BTreeMap<ResourceKey, Arc<ResourceInfo>>,
}

impl Registry {
    pub(crate) fn with_builtins() -> Self {
        let mut r = Self::default();
        for info in builtin::all() {
            r.insert(info);
        }
        r
    }

    pub(crate) fn insert(&mut self, info: ResourceInfo) {
        self.resources.insert(info.key(), Arc::new(info));
    }

    pub(crate) fn remove(&mut self, key: &ResourceKey) {
        self.resources.remove(key);
    }

    pub(crate) fn get(&self, key: &ResourceKey) -> Option<&Arc<ResourceInfo>> {
        self.resources.get(key)
    }

    /// The resource served at `group`/`version` under `plural`.
    pub(crate) fn lookup(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<&Arc<ResourceInfo>> {
        self.resources
            .get(&ResourceKey {
                group: group.to_string(),
                plural: plural.to_string(),
            })
            .filter(|r| r.serves(version))
    }

    /// The resource for an `apiVersion`/`kind` pair (owner references).
    pub(crate) fn by_kind(&self, api_version: &str, kind: &str) -> Option<&Arc<ResourceInfo>> {
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        self.resources
            .values()
            .find(|r| r.group == group && r.kind == kind && r.serves(version))
    }

    pub(crate) fn all(&self) -> impl Iterator<Item = &Arc<ResourceInfo>> {
        self.resources.values()
    }

    /// Served groups with their versions, preferred version first; the core group is "".
    pub(crate) fn groups(&self) -> BTreeMap<String, Vec<String>> {
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in self.resources.values() {
            let versions = groups.entry(r.group.clone()).or_default();
            for v in &r.versions {
                if !versions.contains(v) {
                    versions.push(v.clone());
                }
            }
        }
        groups
    }
}
