//! The ClusterRoles OLM v0 makes so that tenants can use the APIs operators provide, and the
//! OperatorGroup's `olm.providedAPIs` annotation. Pure: objects in, objects out.
//!
//! Copied from OLM (`pkg/controller/operators/olm/operatorgroup.go`: `ensureClusterRolesForCSV`,
//! `ensureProvidedAPIClusterRole`, `ensureOpGroupClusterRole`, `getClusterRoleName`, `hash`;
//! `pkg/controller/registry/resolver/cache/api.go`: `APIKeyToGVKString`, `APIKeyToGVKHash`,
//! `APISet.String`):
//!
//! - per API a CSV owns (owned CRDs and owned API services), ClusterRoles
//!   `<name>-<version>-{admin,edit,view}` with verbs `*`, `create update patch delete` and
//!   `get list watch` on the API, labelled `rbac.authorization.k8s.io/aggregate-to-<level>`
//!   (kube-controller-manager aggregates them into the built-in `admin`, `edit`, `view` roles)
//!   and `olm.opgroup.permissions/aggregate-to-<gvk hash>-<level>`; for a CRD also
//!   `<name>-<version>-crdview` (`get` on that CRD), aggregated to `view`. Each is owned by its
//!   CRD or APIService, non-blocking, so it goes when the API goes;
//! - per OperatorGroup, `olm.og.<group>.<level>-<hash>` with an `aggregationRule` selecting the
//!   second label of each API its CSVs provide;
//! - the group's `olm.providedAPIs`: `Kind.version.group` of those APIs, sorted, comma-separated.
//!
//! Where opcat differs: every list is sorted (OLM iterates Go maps, so its selector order
//! varies); the roles also carry `app.kubernetes.io/managed-by: opcat` (opcat watches its own
//! objects by that label); a group role whose group provides no API any more gets `rules: []`
//! (OLM drops the `aggregationRule` and leaves the last aggregated rules in place).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::{AggregationRule, ClusterRole, PolicyRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use sha2::{Digest, Sha224};

use crate::api::ClusterServiceVersionSpec;
use crate::api::olm_keys::{
    MANAGED as OLM_MANAGED_LABEL, OWNER as OWNER_LABEL, OWNER_KIND as OWNER_KIND_LABEL,
    OWNER_NAMESPACE as OWNER_NAMESPACE_LABEL,
};

/// The OperatorGroup annotation listing the APIs its operators provide.
pub use crate::api::olm_keys::PROVIDED_APIS as PROVIDED_APIS_ANNOTATION;
use crate::bundle::ownership::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};

#[cfg(test)]
mod tests;

const KUBE_AGGREGATION_PREFIX: &str = "rbac.authorization.k8s.io/aggregate-to-";
const GROUP_AGGREGATION_PREFIX: &str = "olm.opgroup.permissions/aggregate-to-";
const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";
const API_SERVICE_API_VERSION: &str = "apiregistration.k8s.io/v1";
/// `kubeResourceNameLimit`.
const NAME_LIMIT: usize = 253;

/// One of the three levels of access OLM grants on a provided API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Admin,
    Edit,
    View,
}

impl Level {
    /// Every level, in OLM's order (`Suffices`).
    pub const ALL: [Level; 3] = [Level::Admin, Level::Edit, Level::View];

    /// The suffix of role names and labels.
    pub fn suffix(self) -> &'static str {
        match self {
            Self::Admin => "admin",
            Self::Edit => "edit",
            Self::View => "view",
        }
    }

    /// `VerbsForSuffix`.
    pub fn verbs(self) -> &'static [&'static str] {
        match self {
            Self::Admin => &["*"],
            Self::Edit => &["create", "update", "patch", "delete"],
            Self::View => &["get", "list", "watch"],
        }
    }
}

/// Group, version and kind of a provided API (OLM's `APIKey` without the plural, as the
/// OperatorGroup's set keeps it).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiKey {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl ApiKey {
    /// `APIKeyToGVKString`: `Kind.version.group`.
    pub fn gvk_string(&self) -> String {
        format!("{}.{}.{}", self.kind, self.version, self.group)
    }

    /// `APIKeyToGVKHash`: FNV-1a (64 bit) of [`Self::gvk_string`], in lowercase hex without
    /// leading zeros (Go's `%x` of a `uint64`).
    pub fn gvk_hash(&self) -> String {
        format!("{:x}", fnv1a_64(self.gvk_string().as_bytes()))
    }

    /// `aggregationLabelFromAPIKey`: the label a group role selects this API's roles by.
    pub fn aggregation_label(&self, level: Level) -> String {
        format!(
            "{GROUP_AGGREGATION_PREFIX}{}-{}",
            self.gvk_hash(),
            level.suffix()
        )
    }
}

/// What owns a provided API's roles: the CRD or APIService serving it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiOwner {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub name: String,
}

/// An API a CSV provides, with what its roles name and grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvidedApi {
    pub key: ApiKey,
    /// The resource the roles grant on (the CRD's plural; an API service's `name`).
    pub resource: String,
    /// `<name>-<version>-`: the roles' name prefix.
    pub name_prefix: String,
    /// The owned CRD's name, for the `crdview` role (`None` for an API service).
    pub crd: Option<String>,
    pub owner: ApiOwner,
}

/// A provided API OLM cannot name roles for.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("owned CustomResourceDefinition {name:?} is not named <plural>.<group>")]
pub struct InvalidCrdName {
    pub name: String,
}

/// The APIs `spec` owns: its owned CRDs, then its owned API services, as listed.
pub fn provided_apis(spec: &ClusterServiceVersionSpec) -> Result<Vec<ProvidedApi>, InvalidCrdName> {
    let mut apis = Vec::new();
    let crds = spec
        .custom_resource_definitions
        .as_ref()
        .and_then(|crds| crds.owned.as_ref());
    for owned in crds.into_iter().flatten() {
        let Some((plural, group)) = owned.name.split_once('.') else {
            return Err(InvalidCrdName {
                name: owned.name.clone(),
            });
        };
        apis.push(ProvidedApi {
            key: ApiKey {
                group: group.to_owned(),
                version: owned.version.clone(),
                kind: owned.kind.clone(),
            },
            resource: plural.to_owned(),
            name_prefix: format!("{}-{}-", owned.name, owned.version),
            crd: Some(owned.name.clone()),
            owner: ApiOwner {
                api_version: CRD_API_VERSION,
                kind: "CustomResourceDefinition",
                name: owned.name.clone(),
            },
        });
    }
    let services = spec
        .api_service_definitions
        .as_ref()
        .and_then(|services| services.owned.as_ref());
    for owned in services.into_iter().flatten() {
        apis.push(ProvidedApi {
            key: ApiKey {
                group: owned.group.clone(),
                version: owned.version.clone(),
                kind: owned.kind.clone(),
            },
            resource: owned.name.clone(),
            name_prefix: format!("{}-{}-", owned.name, owned.version),
            crd: None,
            owner: ApiOwner {
                api_version: API_SERVICE_API_VERSION,
                kind: "APIService",
                name: format!("{}.{}", owned.version, owned.group),
            },
        });
    }
    Ok(apis)
}

/// The roles of one provided API (`ensureClusterRolesForCSV`), owned by `owner_uid` (the uid of
/// the CRD or APIService): admin, edit, view, and for a CRD `crdview`.
pub fn api_roles(api: &ProvidedApi, owner_uid: &str) -> Vec<ClusterRole> {
    let owner = OwnerReference {
        api_version: api.owner.api_version.to_owned(),
        kind: api.owner.kind.to_owned(),
        name: api.owner.name.clone(),
        uid: owner_uid.to_owned(),
        // `ownerutil.NonBlockingOwner`.
        controller: Some(false),
        block_owner_deletion: Some(false),
    };
    let role = |name: String, level: Level, rule: PolicyRule| ClusterRole {
        metadata: ObjectMeta {
            name: Some(name),
            labels: Some(BTreeMap::from([
                (
                    format!("{KUBE_AGGREGATION_PREFIX}{}", level.suffix()),
                    "true".to_owned(),
                ),
                (api.key.aggregation_label(level), "true".to_owned()),
                (OLM_MANAGED_LABEL.to_owned(), "true".to_owned()),
                (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
            ])),
            owner_references: Some(vec![owner.clone()]),
            ..ObjectMeta::default()
        },
        rules: Some(vec![rule]),
        aggregation_rule: None,
    };
    let mut roles: Vec<ClusterRole> = Level::ALL
        .iter()
        .map(|&level| {
            role(
                format!("{}{}", api.name_prefix, level.suffix()),
                level,
                PolicyRule {
                    verbs: strings(level.verbs()),
                    api_groups: Some(vec![api.key.group.clone()]),
                    resources: Some(vec![api.resource.clone()]),
                    ..PolicyRule::default()
                },
            )
        })
        .collect();
    if let Some(crd) = &api.crd {
        roles.push(role(
            format!("{}crdview", api.name_prefix),
            Level::View,
            PolicyRule {
                verbs: strings(&["get"]),
                api_groups: Some(vec!["apiextensions.k8s.io".to_owned()]),
                resources: Some(vec!["customresourcedefinitions".to_owned()]),
                resource_names: Some(vec![crd.clone()]),
                ..PolicyRule::default()
            },
        ));
    }
    roles
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

/// `getClusterRoleName`: `olm.og.<group>.<level>-<hash of namespace/group/level>`, the group's
/// name cut so that the whole fits in 253 characters.
pub fn group_role_name(namespace: &str, group: &str, level: Level) -> String {
    let suffix = level.suffix();
    let hash = base62_sha224(&format!("{namespace}/{group}/{suffix}"));
    // `len("olm.og.%s.%s-%s")` without the verbs.
    let fixed = "olm.og..-".len();
    let limit = NAME_LIMIT.saturating_sub(fixed + suffix.len() + hash.len());
    let group = if group.len() < limit {
        group
    } else {
        // Object names are ASCII (DNS-1123), so any byte index is a character boundary; the
        // fallback keeps a non-ASCII name whole rather than panic.
        group.get(..limit).unwrap_or(group)
    };
    format!("olm.og.{group}.{suffix}-{hash}")
}

/// The OperatorGroup (`(namespace, name)`) a role is one of the [`group_roles`] of, given the
/// role's name and labels: labelled with OLM's owner labels of an OperatorGroup (what OLM's
/// `operatorGroupDeleted` selects the roles to delete by) and opcat's managed-by label, and
/// named as [`group_role_name`] names that group's roles, so that no role opcat did not make
/// for that group qualifies.
pub fn role_group<'a>(
    name: &str,
    label: impl Fn(&str) -> Option<&'a str>,
) -> Option<(&'a str, &'a str)> {
    if label(MANAGED_BY_LABEL)? != MANAGED_BY_VALUE || label(OWNER_KIND_LABEL)? != "OperatorGroup" {
        return None;
    }
    let (namespace, group) = (label(OWNER_NAMESPACE_LABEL)?, label(OWNER_LABEL)?);
    Level::ALL
        .iter()
        // Only the level the name ends in is hashed.
        .filter(|level| name.contains(&format!(".{}-", level.suffix())))
        .any(|&level| group_role_name(namespace, group, level) == name)
        .then_some((namespace, group))
}

/// The group's three roles (`ensureOpGroupClusterRoles`): OLM's owner labels, and an
/// `aggregationRule` with one selector per provided API, sorted; no API: `rules: []` and no
/// rule (see the module docs).
pub fn group_roles(namespace: &str, group: &str, apis: &BTreeSet<ApiKey>) -> Vec<ClusterRole> {
    Level::ALL
        .iter()
        .map(|&level| {
            let selectors: Vec<LabelSelector> = apis
                .iter()
                .map(|api| LabelSelector {
                    match_labels: Some(BTreeMap::from([(
                        api.aggregation_label(level),
                        "true".to_owned(),
                    )])),
                    ..LabelSelector::default()
                })
                .collect();
            let (aggregation_rule, rules) = if selectors.is_empty() {
                (None, Some(Vec::new()))
            } else {
                (
                    Some(AggregationRule {
                        cluster_role_selectors: Some(selectors),
                    }),
                    None,
                )
            };
            ClusterRole {
                metadata: ObjectMeta {
                    name: Some(group_role_name(namespace, group, level)),
                    labels: Some(BTreeMap::from([
                        (OWNER_LABEL.to_owned(), group.to_owned()),
                        (OWNER_KIND_LABEL.to_owned(), "OperatorGroup".to_owned()),
                        (OWNER_NAMESPACE_LABEL.to_owned(), namespace.to_owned()),
                        (OLM_MANAGED_LABEL.to_owned(), "true".to_owned()),
                        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
                    ])),
                    ..ObjectMeta::default()
                },
                rules,
                aggregation_rule,
            }
        })
        .collect()
}

/// `APISet.String`: the [`PROVIDED_APIS_ANNOTATION`] value.
pub fn provided_apis_annotation(apis: &BTreeSet<ApiKey>) -> String {
    let mut gvks: Vec<String> = apis.iter().map(ApiKey::gvk_string).collect();
    gvks.sort();
    gvks.join(",")
}

/// The annotation a group should carry, given the one it has: absent while it never listed an
/// API (OLM first writes it when a CSV's APIs join the group), then the list, which is empty
/// once the last API is gone (`pruneProvidedAPIs`).
pub fn desired_annotation(current: Option<&str>, apis: &BTreeSet<ApiKey>) -> Option<String> {
    if apis.is_empty() && current.is_none() {
        return None;
    }
    Some(provided_apis_annotation(apis))
}

/// Go's `hash/fnv` `New64a`.
fn fnv1a_64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(PRIME)
    })
}

/// OLM's `hash`: SHA-224 of `text` as a big-endian integer, written in base 62 with Go's
/// `big.Int.Text(62)` digits (`0-9a-zA-Z`, no leading zeros).
fn base62_sha224(text: &str) -> String {
    const DIGITS: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut number: Vec<u8> = Sha224::digest(text.as_bytes()).to_vec();
    let mut digits = Vec::new();
    // Long division by 62, most significant byte first, until the number is zero.
    while number.iter().any(|byte| *byte != 0) {
        let mut remainder = 0u32;
        for byte in &mut number {
            let value = (remainder << 8) | u32::from(*byte);
            // value < 62 * 256, so the quotient fits a byte.
            *byte = u8::try_from(value / 62).unwrap_or(u8::MAX);
            remainder = value % 62;
        }
        digits.push(DIGITS[remainder as usize]);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}
