//! Least privilege (DESIGN invariant 12): what a copy of a pull secret holds. Pure.
//!
//! A copy holds the entries of its source (the `auths` map of `.dockerconfigjson`, the
//! top-level map of `.dockercfg`) whose registry key matches at least one image of the
//! operators using the copy: every container and init-container image of their CSVs'
//! Deployments and every `relatedImages` entry. Matching is the kubelet's, through the
//! registry keyring's own matcher ([`key_matches_any`]): host labels as globs
//! (`*.example.com` covers `a.example.com`, not `a.b.example.com`), equal ports, the key's
//! path a prefix of the image's (`registry.example.com/team-a` covers
//! `registry.example.com/team-a/op`), Docker Hub aliases. An entry is kept whole (`auth`,
//! `username`/`password`, `identitytoken`, `email`, whatever it holds).
//!
//! The copy's document is written anew: only the data key of its type, object keys sorted at
//! every level, compact JSON. The same source and images always give the same bytes, so a
//! converged copy needs no write (invariant 5). Other top-level fields of a
//! `.dockerconfigjson` (`credsStore`, `credHelpers`, ...) are dropped: the kubelet reads only
//! `auths`.
//!
//! A source none of whose entries matches is not copied at all ([`Scoped::is_empty`]).
//! [`CopyScope::Whole`], chosen by the CatalogSource annotation
//! [`PULL_SECRET_SCOPE_ANNOTATION`]`=`[`PULL_SECRET_SCOPE_WHOLE`], copies the data as it is,
//! for operators that pull images their bundle does not declare.
//!
//! Nothing here shows secret data: [`Scoped`]'s `Debug` lists registry keys only, errors name
//! the Secret and the registry key (DESIGN invariant 8).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use serde_json::{Map, Value};

use super::copy::{CopyError, DOCKERCFG_TYPE, validate_source};
use super::names::{PULL_SECRET_SCOPE_ANNOTATION, PULL_SECRET_SCOPE_WHOLE};
use crate::registry::ImageRef;
use crate::registry::credentials::{ConfigError, ConfigFormat, parse_config_value};
use crate::registry::keyring::key_matches_any;

/// Which entries of a source a copy holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CopyScope {
    /// Every entry, the data exactly as in the source (the CatalogSource opted out).
    Whole,
    /// The entries whose key matches at least one of these images.
    Images(Vec<ImageRef>),
}

impl CopyScope {
    /// The scope for a catalog with `annotations` whose operators in the namespace use
    /// `images` (references that do not parse are skipped: no kubelet could pull them).
    pub fn of<'a>(
        annotations: Option<&BTreeMap<String, String>>,
        images: impl IntoIterator<Item = &'a str>,
    ) -> CopyScope {
        if copies_whole(annotations) {
            return CopyScope::Whole;
        }
        let unique: BTreeSet<&str> = images.into_iter().collect();
        CopyScope::Images(
            unique
                .into_iter()
                .filter_map(|image| image.parse().ok())
                .collect(),
        )
    }
}

/// Whether the CatalogSource `annotations` opt out of scoping: its copies hold whole secrets.
pub fn copies_whole(annotations: Option<&BTreeMap<String, String>>) -> bool {
    annotations
        .and_then(|annotations| annotations.get(PULL_SECRET_SCOPE_ANNOTATION))
        .is_some_and(|value| value.trim() == PULL_SECRET_SCOPE_WHOLE)
}

/// What the copy of one source holds. `Debug` shows registry keys, never data.
#[derive(Clone, PartialEq)]
pub struct Scoped {
    /// The copy's data.
    pub data: BTreeMap<String, ByteString>,
    /// Registry keys the copy holds, as written in the source, sorted.
    pub registries: Vec<String>,
    /// Registry keys of the source the copy leaves out, sorted.
    pub left_out: Vec<String>,
}

impl Scoped {
    /// Whether the copy would hold no registry at all (then it is not made).
    pub fn is_empty(&self) -> bool {
        self.registries.is_empty()
    }

    /// The value of the copy's [`REGISTRIES_ANNOTATION`](super::names::REGISTRIES_ANNOTATION).
    pub fn registries_annotation(&self) -> String {
        self.registries.join(",")
    }
}

impl fmt::Debug for Scoped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scoped")
            .field("registries", &self.registries)
            .field("left_out", &self.left_out)
            .finish_non_exhaustive()
    }
}

/// What a copy of `source` holds under `scope`. A source that is not a pull secret, or (when
/// scoping) whose document the kubelet could not read, is an error: its copies are kept as
/// they are.
pub fn scope_source(source: &Secret, scope: &CopyScope) -> Result<Scoped, CopyError> {
    let type_ = validate_source(source)?;
    let format = if type_ == DOCKERCFG_TYPE {
        ConfigFormat::DockerCfg
    } else {
        ConfigFormat::DockerConfigJson
    };
    let data = source.data.clone().unwrap_or_default();
    let bytes = data
        .get(format.data_key())
        .map(|value| value.0.as_slice())
        .unwrap_or_default();
    let document: Result<Value, ConfigError> =
        serde_json::from_slice(bytes).map_err(|error| ConfigError::NotJson {
            format,
            line: error.line(),
            column: error.column(),
        });
    let images = match scope {
        CopyScope::Whole => {
            let registries = document
                .ok()
                .and_then(|document| entries(&document, format).cloned())
                .map(|entries| entries.keys().cloned().collect())
                .unwrap_or_default();
            return Ok(Scoped {
                data,
                registries,
                left_out: Vec::new(),
            });
        }
        CopyScope::Images(images) => images,
    };
    let unreadable = |error| CopyError::Unreadable {
        namespace: source.metadata.namespace.clone().unwrap_or_default(),
        name: source.metadata.name.clone().unwrap_or_default(),
        error,
    };
    let document = document.map_err(unreadable)?;
    parse_config_value(&document, format).map_err(unreadable)?;
    // parse_config_value accepted the document, so it has its map of entries.
    let entries = entries(&document, format).cloned().unwrap_or_default();
    let mut kept = Map::new();
    let mut left_out = Vec::new();
    for (key, entry) in entries {
        if key_matches_any(&key, images) {
            kept.insert(key, sorted(&entry));
        } else {
            left_out.push(key);
        }
    }
    let mut registries: Vec<String> = kept.keys().cloned().collect();
    registries.sort();
    left_out.sort();
    let kept = sorted(&Value::Object(kept));
    let document = match format {
        ConfigFormat::DockerConfigJson => {
            Value::Object(Map::from_iter([("auths".to_owned(), kept)]))
        }
        ConfigFormat::DockerCfg => kept,
    };
    Ok(Scoped {
        data: BTreeMap::from([(
            format.data_key().to_owned(),
            ByteString(document.to_string().into_bytes()),
        )]),
        registries,
        left_out,
    })
}

/// Each registry entry of a pull secret's document in canonical form (object keys sorted,
/// compact JSON), by registry key, as [`scope_source`] writes entries: whether a copy carries a
/// source's current entries is decided on these. Secret data, to hash, never to show. `None`
/// when the document cannot be read.
pub fn canonical_entries(secret: &Secret) -> Option<BTreeMap<String, Vec<u8>>> {
    let format = if secret.type_.as_deref() == Some(DOCKERCFG_TYPE) {
        ConfigFormat::DockerCfg
    } else {
        ConfigFormat::DockerConfigJson
    };
    let bytes = &secret.data.as_ref()?.get(format.data_key())?.0;
    let document: Value = serde_json::from_slice(bytes).ok()?;
    Some(
        entries(&document, format)?
            .iter()
            .map(|(key, entry)| (key.clone(), sorted(entry).to_string().into_bytes()))
            .collect(),
    )
}

/// The map of registry entries of a dockerconfig document, if it has one.
fn entries(document: &Value, format: ConfigFormat) -> Option<&Map<String, Value>> {
    match format {
        ConfigFormat::DockerConfigJson => document.get("auths")?.as_object(),
        ConfigFormat::DockerCfg => document.as_object(),
    }
}

/// `value` with the keys of every object in sorted order, whatever order the JSON map keeps.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let by_key: BTreeMap<&String, Value> = map
                .iter()
                .map(|(key, value)| (key, sorted(value)))
                .collect();
            Value::Object(
                by_key
                    .into_iter()
                    .map(|(key, value)| (key.clone(), value))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}
