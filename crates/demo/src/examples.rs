//! The manifests of `deploy/examples/`, applied the way an admin applies them (`kubectl apply
//! --server-side -k deploy/examples`), adapted to a registry on this machine: the placeholder
//! registry `localhost:5000` is rewritten to the real one, and the pull Secret can be given real
//! credentials. Loading is pure (files in, JSON out); [`apply`] talks to the API server.

use std::path::{Path, PathBuf};

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use serde_json::Value;

/// The registry every example names (`bundles/README.md`).
pub const EXAMPLE_REGISTRY: &str = "localhost:5000";

/// The field manager of [`apply`]: what `kubectl apply --server-side` uses.
pub const FIELD_MANAGER: &str = "kubectl";

/// Why the examples could not be loaded or applied.
#[derive(Debug, thiserror::Error)]
pub enum ExamplesError {
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid YAML: {message}")]
    Yaml { path: PathBuf, message: String },
    #[error("{path}: every document needs apiVersion, kind and metadata.name")]
    Incomplete { path: PathBuf },
    #[error("the API server does not serve {kind} ({api_version})")]
    Discovery {
        kind: String,
        api_version: String,
        #[source]
        source: kube::Error,
    },
    #[error("applying {kind} {name}")]
    Apply {
        kind: String,
        name: String,
        #[source]
        source: kube::Error,
    },
}

/// One object of one example file.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The file it came from (`catalog-source.yaml`).
    pub file: String,
    /// The object.
    pub object: Value,
}

impl Manifest {
    /// `kind`.
    pub fn kind(&self) -> &str {
        self.object["kind"].as_str().unwrap_or_default()
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.object["metadata"]["name"].as_str().unwrap_or_default()
    }

    /// `metadata.namespace` (empty for cluster-scoped objects).
    pub fn namespace(&self) -> &str {
        self.object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
    }

    /// `Kind namespace/name` (or `Kind name`), for messages.
    pub fn describe(&self) -> String {
        match self.namespace() {
            "" => format!("{} {}", self.kind(), self.name()),
            namespace => format!("{} {namespace}/{}", self.kind(), self.name()),
        }
    }
}

/// Every example file, every `localhost:5000` replaced by `registry_host`: first those
/// `deploy/examples/kustomization.yaml` lists (what `kubectl apply -k` applies) in its order,
/// then the others (the placeholder pull Secret and the manual-approval example, applied by
/// hand) by name.
pub fn load(examples_dir: &Path, registry_host: &str) -> Result<Vec<Manifest>, ExamplesError> {
    let kustomization = examples_dir.join("kustomization.yaml");
    let index = read_yaml(&kustomization)?;
    let mut files: Vec<String> = index
        .first()
        .and_then(|k| k["resources"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|file| file.as_str().map(str::to_owned))
        .collect();
    let mut others: Vec<String> = std::fs::read_dir(examples_dir)
        .map_err(|source| ExamplesError::Read {
            path: examples_dir.to_owned(),
            source,
        })?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".yaml") && name != "kustomization.yaml")
        .filter(|name| !files.contains(name))
        .collect();
    others.sort();
    files.extend(others);
    let mut manifests = Vec::new();
    for file in files {
        let path = examples_dir.join(&file);
        let text = read(&path)?.replace(EXAMPLE_REGISTRY, registry_host);
        for object in parse_yaml(&path, &text)? {
            let manifest = Manifest {
                file: file.clone(),
                object,
            };
            if manifest.kind().is_empty()
                || manifest.name().is_empty()
                || manifest.object["apiVersion"].as_str().is_none()
            {
                return Err(ExamplesError::Incomplete { path });
            }
            manifests.push(manifest);
        }
    }
    Ok(manifests)
}

/// The manifests of the given files, in the order of `files` (each file's objects in their
/// order).
pub fn from_files(manifests: &[Manifest], files: &[&str]) -> Vec<Manifest> {
    files
        .iter()
        .flat_map(|file| manifests.iter().filter(move |m| m.file == *file))
        .cloned()
        .collect()
}

/// Puts `dockerconfigjson` into a `kubernetes.io/dockerconfigjson` Secret manifest (replacing
/// the placeholder credentials), as `kubectl create secret docker-registry` would.
pub fn set_dockerconfigjson(secret: &mut Manifest, dockerconfigjson: &str) {
    let object = &mut secret.object;
    if let Some(map) = object.as_object_mut() {
        map.remove("data");
    }
    object["stringData"] = serde_json::json!({ ".dockerconfigjson": dockerconfigjson });
}

/// Server-side applies `manifest` with field manager [`FIELD_MANAGER`] (as `kubectl apply
/// --server-side`); returns the object the server stored.
pub async fn apply(
    client: &kube::Client,
    manifest: &Manifest,
) -> Result<DynamicObject, ExamplesError> {
    let api = api_for(client, &manifest.object, manifest.namespace()).await?;
    api.patch(
        manifest.name(),
        &PatchParams::apply(FIELD_MANAGER),
        &Patch::Apply(&manifest.object),
    )
    .await
    .map_err(|source| ExamplesError::Apply {
        kind: manifest.kind().to_owned(),
        name: manifest.describe(),
        source,
    })
}

/// A dynamic `Api` for the kind of `object` (found through discovery, as kubectl does).
pub async fn api_for(
    client: &kube::Client,
    object: &Value,
    namespace: &str,
) -> Result<Api<DynamicObject>, ExamplesError> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    };
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, capabilities) =
        kube::discovery::pinned_kind(client, &gvk)
            .await
            .map_err(|source| ExamplesError::Discovery {
                kind: kind.to_owned(),
                api_version: api_version.to_owned(),
                source,
            })?;
    Ok(match capabilities.scope {
        Scope::Namespaced => Api::namespaced_with(client.clone(), namespace, &resource),
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    })
}

fn read(path: &Path) -> Result<String, ExamplesError> {
    std::fs::read_to_string(path).map_err(|source| ExamplesError::Read {
        path: path.to_owned(),
        source,
    })
}

fn read_yaml(path: &Path) -> Result<Vec<Value>, ExamplesError> {
    parse_yaml(path, &read(path)?)
}

/// Every non-empty YAML document of `text`.
pub(crate) fn parse_yaml(path: &Path, text: &str) -> Result<Vec<Value>, ExamplesError> {
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(text).map_err(|error| ExamplesError::Yaml {
            path: path.to_owned(),
            message: error.to_string(),
        })?;
    Ok(documents.into_iter().filter(|d| !d.is_null()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn examples_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/examples")
    }

    #[test]
    fn the_examples_load_kustomization_first_with_the_registry_rewritten() {
        let manifests = load(&examples_dir(), "127.0.0.1:5999").unwrap();
        let described: Vec<String> = manifests.iter().map(Manifest::describe).collect();
        assert_eq!(
            described,
            [
                "Namespace opcat-catalogs",
                "Namespace widgets",
                "CatalogSource opcat-catalogs/opcat-examples",
                "OperatorGroup widgets/widgets",
                "Subscription widgets/widget-operator",
                // Not in the kustomization: applied by hand.
                "Namespace gadgets",
                "OperatorGroup gadgets/global",
                "Secret opcat-catalogs/example-registry-pull",
                "Subscription gadgets/gadget-operator",
            ]
        );
        let catalog = &manifests[2];
        assert_eq!(
            catalog.object["spec"]["image"],
            "127.0.0.1:5999/opcat-examples/catalog:latest"
        );
        let secret = &manifests[7].object["stringData"][".dockerconfigjson"];
        assert!(secret.as_str().unwrap().contains("\"127.0.0.1:5999\""));
        assert!(
            manifests
                .iter()
                .all(|m| !m.object.to_string().contains(EXAMPLE_REGISTRY))
        );
    }

    #[test]
    fn real_credentials_replace_the_placeholder() {
        let manifests = load(&examples_dir(), "127.0.0.1:5999").unwrap();
        let mut secret = from_files(&manifests, &["pull-secret.yaml"]).remove(0);
        set_dockerconfigjson(&mut secret, r#"{"auths":{}}"#);
        assert_eq!(
            secret.object["stringData"],
            serde_json::json!({".dockerconfigjson": r#"{"auths":{}}"#})
        );
        assert_eq!(secret.object["type"], "kubernetes.io/dockerconfigjson");
    }

    #[test]
    fn a_file_that_is_not_yaml_names_itself() {
        let error = parse_yaml(Path::new("broken.yaml"), "a: [").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("broken.yaml is not valid YAML")
        );
    }
}
