//! `olm.csv.metadata`: the CSV's descriptive metadata, typed on request, and the cheap shape
//! check applied when a catalog is loaded.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::property::{Gvk, null_as_default};

/// The CSV metadata carried by `olm.csv.metadata` (note the camelCase `crdDescriptions` and
/// `apiServiceDefinitions`, unlike the CSV's own keys).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsvMetadata {
    /// CSV annotations.
    #[serde(default, deserialize_with = "null_as_default")]
    pub annotations: BTreeMap<String, String>,
    /// Owned and required API services (kept as JSON).
    #[serde(default, deserialize_with = "null_as_default")]
    pub api_service_definitions: Option<serde_json::Value>,
    /// Owned and required CRDs (kept as JSON).
    #[serde(default, deserialize_with = "null_as_default")]
    pub crd_descriptions: Option<serde_json::Value>,
    /// Long description (markdown).
    #[serde(default, deserialize_with = "null_as_default")]
    pub description: String,
    /// Human-readable name.
    #[serde(default, deserialize_with = "null_as_default")]
    pub display_name: String,
    /// Supported install modes.
    #[serde(default, deserialize_with = "null_as_default")]
    pub install_modes: Vec<InstallMode>,
    /// Search keywords.
    #[serde(default, deserialize_with = "null_as_default")]
    pub keywords: Vec<String>,
    /// CSV labels.
    #[serde(default, deserialize_with = "null_as_default")]
    pub labels: BTreeMap<String, String>,
    /// Related links.
    #[serde(default, deserialize_with = "null_as_default")]
    pub links: Vec<AppLink>,
    /// Maintainers.
    #[serde(default, deserialize_with = "null_as_default")]
    pub maintainers: Vec<Maintainer>,
    /// Maturity (`alpha`, `stable`, ...).
    #[serde(default, deserialize_with = "null_as_default")]
    pub maturity: String,
    /// Minimum Kubernetes version.
    #[serde(default, deserialize_with = "null_as_default")]
    pub min_kube_version: String,
    /// Native APIs the operator needs.
    #[serde(default, rename = "nativeAPIs", deserialize_with = "null_as_default")]
    pub native_apis: Vec<Gvk>,
    /// The provider.
    #[serde(default, deserialize_with = "null_as_default")]
    pub provider: AppLink,
}

/// The shape of [`CsvMetadata`], checked at load without copying its strings. Like Go, JSON
/// `null` is accepted anywhere and unknown fields are ignored.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // Fields exist to be type-checked by serde.
pub(crate) struct CsvMetadataCheck<'a> {
    #[serde(default, borrow)]
    annotations: Option<BTreeMap<Cow<'a, str>, IgnoredString>>,
    #[serde(default, borrow)]
    api_service_definitions: Option<&'a RawValue>,
    #[serde(default, borrow)]
    crd_descriptions: Option<&'a RawValue>,
    #[serde(default)]
    description: IgnoredString,
    #[serde(default)]
    display_name: IgnoredString,
    #[serde(default)]
    install_modes: Option<Vec<InstallModeCheck>>,
    #[serde(default)]
    keywords: Option<Vec<IgnoredString>>,
    #[serde(default, borrow)]
    labels: Option<BTreeMap<Cow<'a, str>, IgnoredString>>,
    #[serde(default)]
    links: Option<Vec<Option<LinkCheck>>>,
    #[serde(default)]
    maintainers: Option<Vec<Option<LinkCheck>>>,
    #[serde(default)]
    maturity: IgnoredString,
    #[serde(default)]
    min_kube_version: IgnoredString,
    #[serde(default, rename = "nativeAPIs")]
    native_apis: Option<Vec<Option<GvkCheck>>>,
    #[serde(default)]
    provider: Option<LinkCheck>,
}

#[derive(Default, Deserialize)]
#[allow(dead_code)] // Fields exist to be type-checked by serde.
struct LinkCheck {
    #[serde(default)]
    name: IgnoredString,
    #[serde(default)]
    url: IgnoredString,
    #[serde(default)]
    email: IgnoredString,
}

#[derive(Deserialize)]
#[allow(dead_code)] // Fields exist to be type-checked by serde.
struct GvkCheck {
    #[serde(default)]
    group: IgnoredString,
    #[serde(default)]
    kind: IgnoredString,
    #[serde(default)]
    version: IgnoredString,
}

#[derive(Deserialize)]
#[allow(dead_code)] // Fields exist to be type-checked by serde.
struct InstallModeCheck {
    #[serde(rename = "type", default)]
    type_: IgnoredString,
    #[serde(default)]
    supported: Option<bool>,
}

/// A string (or null) whose content is not needed.
#[derive(Default)]
struct IgnoredString;

impl<'de> Deserialize<'de> for IgnoredString {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Option::<Cow<'de, str>>::deserialize(deserializer).map(|_| IgnoredString)
    }
}

/// An install mode and whether the operator supports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallMode {
    /// `OwnNamespace`, `SingleNamespace`, `MultiNamespace` or `AllNamespaces`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Whether the mode is supported.
    pub supported: bool,
}

/// A named link.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppLink {
    /// Link name.
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    /// Link URL.
    #[serde(default, deserialize_with = "null_as_default")]
    pub url: String,
}

/// A maintainer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Maintainer {
    /// Name.
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    /// E-mail address.
    #[serde(default, deserialize_with = "null_as_default")]
    pub email: String,
}
