//! `CatalogSource` (`operators.coreos.com/v1alpha1`): a catalog of operators, published as a
//! file-based catalog image, and the pull secrets needed to read it.
//!
//! Field names and shapes follow OLM v0 (`operator-framework/api`,
//! `pkg/operators/v1alpha1/catalogsource_types.go`). opcat adds two status fields
//! (`resolvedImageDigest`, `packageCount`) that OLM clients ignore.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `spec.sourceType` value opcat serves: a catalog image (`spec.image`).
pub const SOURCE_TYPE_GRPC: &str = "grpc";
/// The `spec.sourceType` value of a catalog stored in a ConfigMap (not supported by opcat).
pub const SOURCE_TYPE_CONFIGMAP: &str = "configmap";
/// Deprecated alias of [`SOURCE_TYPE_CONFIGMAP`] (not supported by opcat).
pub const SOURCE_TYPE_INTERNAL: &str = "internal";

/// How a CatalogSource publishes its catalog.
// Every `printcolumn(...)` repeats `type_ = "string"`; clippy reads the repeats as duplicated
// attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "CatalogSource",
    plural = "catalogsources",
    namespaced,
    status = "CatalogSourceStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "catsrc",
    category = "olm",
    doc = "A CatalogSource is a repository of operators: a file-based catalog (FBC) published as \
           a container image. opcat pulls the image with the pull secrets named in \
           `spec.secrets`, indexes the catalog, and polls it for updates. Subscriptions in this \
           namespace (or in the global catalog namespace) install operators from it.",
    printcolumn(
        name = "Display",
        type_ = "string",
        json_path = ".spec.displayName",
        description = "The pretty name of the catalog"
    ),
    printcolumn(
        name = "Type",
        type_ = "string",
        json_path = ".spec.sourceType",
        description = "The type of the catalog"
    ),
    printcolumn(
        name = "Publisher",
        type_ = "string",
        json_path = ".spec.publisher",
        description = "The publisher of the catalog"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSourceSpec {
    /// How the catalog is served. `grpc` with `image`: the catalog image is pulled and read
    /// directly; `grpc` with only `address`: the catalog is read from that registry server.
    /// `configmap` and `internal` (ConfigMap catalogs) are accepted but reported as unsupported
    /// in status.
    pub source_type: String,

    /// Preference among catalogs when the same package is offered by more than one: higher
    /// is preferred. Defaults to 0; ties are broken by catalog name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,

    /// Name of a ConfigMap holding the catalog, for `configmap` and `internal` source types.
    /// Not supported by opcat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<String>,

    /// `host:port` of an existing gRPC registry server, for `grpc` catalogs without `image`:
    /// opcat reads the catalog from it (operator-registry's API). Ignored when `image` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,

    /// Reference of the catalog image, for example `registry.example.com/catalogs/ops:v4`
    /// or a digest reference. The image holds a file-based catalog in the directory named by
    /// its `operators.operatorframework.io.index.configs.v1` label (default `/configs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,

    /// Overrides for the catalog registry pod that OLM runs. opcat reads the catalog
    /// in-process and runs no pod, so these settings are accepted and kept but have no effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_pod_config: Option<GrpcPodConfig>,

    /// How often to look for a new catalog image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,

    /// Names of Secrets in this namespace that grant access to the catalog's registries
    /// (type `kubernetes.io/dockerconfigjson` or `kubernetes.io/dockercfg`). opcat pulls the
    /// catalog and bundle images with them, copies them into the namespace of every operator
    /// installed from this catalog, and attaches the copies to the operator's service accounts
    /// and Deployments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets: Option<Vec<String>>,

    /// Human-readable name of the catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,

    /// Description of the catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,

    /// Who publishes the catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,

    /// Icon of the catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<Icon>,
}

/// A base64-encoded image with its media type.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Icon {
    /// Image data, base64-encoded.
    #[serde(rename = "base64data")]
    pub base64_data: String,
    /// Media type of the image, for example `image/svg+xml` or `image/png`.
    #[serde(rename = "mediatype")]
    pub media_type: String,
}

/// Overrides for OLM's catalog registry pod. Kept for compatibility; opcat runs no pod.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrpcPodConfig {
    /// Node selector for the registry pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,

    /// Tolerations for the registry pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,

    /// Affinity for the registry pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,

    /// Priority class of the registry pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,

    /// Security context profile of the registry pod: `legacy` or `restricted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context_config: Option<SecurityContextConfig>,

    /// Memory the registry pod is expected to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_target: Option<Quantity>,

    /// Serve the catalog by extracting its content from the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract_content: Option<ExtractContentConfig>,
}

/// Security context profile of OLM's registry pod.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(transform = super::schema::drop_description)]
pub enum SecurityContextConfig {
    /// Run without the restricted pod security settings.
    Legacy,
    /// Run with the `restricted` pod security settings.
    Restricted,
}

/// Where the file-based catalog sits inside the catalog image.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtractContentConfig {
    /// Directory of the file-based catalog in the image.
    pub catalog_dir: String,
    /// Directory of the pre-built serving cache in the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_dir: Option<String>,
}

/// How a catalog is kept up to date.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStrategy {
    /// Poll the catalog image for a new digest at a fixed interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_poll: Option<RegistryPoll>,
}

/// Polling of the catalog image.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryPoll {
    /// Time between two checks of the catalog image, as a Go duration such as `10m`, `1h` or
    /// `1h30m`. An invalid value falls back to 15m and is reported in `status.reason`
    /// (`InvalidIntervalError`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
}

/// Observed state of a CatalogSource.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSourceStatus {
    /// Human-readable explanation of `reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,

    /// Why the catalog is not usable: `SpecInvalidError`, `ConfigMapError`,
    /// `RegistryServerError` or `InvalidIntervalError`. Empty when the catalog is healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,

    /// When the catalog image was last checked for a new digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_image_registry_poll: Option<Time>,

    /// Deprecated: the ConfigMap a `configmap` catalog was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_reference: Option<ConfigMapResourceReference>,

    /// The Service OLM exposes a gRPC catalog on. opcat serves no Service and leaves it empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_service: Option<RegistryServiceStatus>,

    /// Whether the catalog could be read the last time it was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_state: Option<GrpcConnectionState>,

    /// Detailed conditions of the catalog (opcat writes type `Ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,

    // opcat additions below: not in OLM's schema; OLM clients ignore them.
    /// Digest (`sha256:...`) of the catalog image opcat last loaded; for a catalog read from a
    /// registry server (`spec.address`), the digest of the content it served. Bundles are
    /// resolved from this exact content until a poll finds a new digest. (opcat extension.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_image_digest: Option<String>,

    /// Number of packages in the catalog opcat last loaded. (opcat extension.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_count: Option<i64>,
}

/// Reference to the ConfigMap of a `configmap` catalog.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapResourceReference {
    /// Name of the ConfigMap.
    pub name: String,
    /// Namespace of the ConfigMap.
    pub namespace: String,
    /// UID of the ConfigMap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Resource version of the ConfigMap that was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// When the ConfigMap was last read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
}

/// The Service a gRPC catalog is served on (OLM only).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryServiceStatus {
    /// Protocol of the Service, `grpc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Name of the Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Namespace of the Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_namespace: Option<String>,
    /// Port of the Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// When the Service was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,
}

/// Result of the last attempt to read the catalog.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrpcConnectionState {
    /// Where the catalog was read from (for opcat: the catalog image reference, or
    /// `spec.address` for a registry server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// `READY` when the catalog was read and indexed; `TRANSIENT_FAILURE` when it could not
    /// be; `CONNECTING` while the first read is in progress.
    pub last_observed_state: String,
    /// When the catalog was last read successfully or unsuccessfully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_connect: Option<Time>,
}

/// The kind of a catalog, parsed from `spec.sourceType`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceType {
    /// `grpc`: a catalog image (`spec.image`) or an existing registry (`spec.address`).
    Grpc,
    /// `configmap` or its deprecated alias `internal`.
    ConfigMap,
    /// Any other value (OLM reports `SpecInvalidError`).
    Unknown(String),
}

impl CatalogSourceSpec {
    /// The parsed `sourceType`.
    pub fn source_type(&self) -> SourceType {
        match self.source_type.as_str() {
            SOURCE_TYPE_GRPC => SourceType::Grpc,
            SOURCE_TYPE_CONFIGMAP | SOURCE_TYPE_INTERNAL => SourceType::ConfigMap,
            other => SourceType::Unknown(other.to_owned()),
        }
    }

    /// The raw poll interval (`spec.updateStrategy.registryPoll.interval`), if set.
    pub fn poll_interval(&self) -> Option<&str> {
        self.update_strategy
            .as_ref()?
            .registry_poll
            .as_ref()?
            .interval
            .as_deref()
    }

    /// Names of the pull secrets in `spec.secrets`, without empty entries (OLM skips them too).
    pub fn secret_names(&self) -> impl Iterator<Item = &str> {
        self.secrets
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|name| !name.is_empty())
    }
}
