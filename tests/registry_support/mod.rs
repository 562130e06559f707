//! Shared helpers of the `registry_*` integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use opcat::registry::PullSecret;
use opcat::registry::credentials::DOCKER_CONFIG_JSON_TYPE;
use opcat::registry::{Keyring, Registry, RegistryOptions};
use test_registry::Distribution;

/// A `Registry` trusting the test CA, with its cache in `cache`.
pub fn registry_trusting(ca_pem: &Path, cache: &Path) -> Registry {
    opcat::registry::install_crypto_provider();
    let mut options = RegistryOptions::new(cache);
    options
        .trust
        .extra_root_certs_pem
        .push(fs::read(ca_pem).expect("read CA"));
    Registry::new(options).expect("registry")
}

/// A `Registry` for the real test registry.
pub fn registry_for(dist: &Distribution, cache: &Path) -> Registry {
    registry_trusting(&dist.ca.pem_path(), cache)
}

/// A dockerconfigjson pull secret.
pub fn secret(name: &str, json: &str) -> PullSecret {
    PullSecret {
        name: name.to_owned(),
        type_: DOCKER_CONFIG_JSON_TYPE.to_owned(),
        data: BTreeMap::from([(".dockerconfigjson".to_owned(), json.as_bytes().to_vec())]),
    }
}

/// A keyring holding the registry's credentials under secret `name`.
pub fn keyring_for(dist: &Distribution, name: &str) -> Keyring {
    let (keyring, errors) = Keyring::from_secrets(&[secret(name, &dist.dockerconfigjson())]);
    assert!(errors.is_empty(), "{errors:?}");
    keyring
}

/// A small FBC catalog directory.
pub fn write_catalog(dir: &Path) {
    fs::create_dir_all(dir.join("widgets")).unwrap();
    fs::write(
        dir.join("widgets/catalog.yaml"),
        "---\nschema: olm.package\nname: widgets\ndefaultChannel: stable\n\
         ---\nschema: olm.channel\npackage: widgets\nname: stable\nentries:\n  - name: widgets.v1.0.0\n\
         ---\nschema: olm.bundle\npackage: widgets\nname: widgets.v1.0.0\n\
         image: registry.example.com/widgets-bundle:v1.0.0\nproperties:\n  - type: olm.package\n    \
         value: {packageName: widgets, version: 1.0.0}\n",
    )
    .unwrap();
}

/// A small registry+v1 bundle directory.
pub fn write_bundle(dir: &Path) {
    fs::create_dir_all(dir.join("manifests")).unwrap();
    fs::create_dir_all(dir.join("metadata")).unwrap();
    fs::write(
        dir.join("manifests/widgets.clusterserviceversion.yaml"),
        "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\n\
         metadata:\n  name: widgets.v1.0.0\nspec:\n  version: 1.0.0\n",
    )
    .unwrap();
    fs::write(
        dir.join("metadata/annotations.yaml"),
        "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  \
         operators.operatorframework.io.bundle.manifests.v1: manifests/\n  \
         operators.operatorframework.io.bundle.metadata.v1: metadata/\n  \
         operators.operatorframework.io.bundle.package.v1: widgets\n  \
         operators.operatorframework.io.bundle.channels.v1: stable\n  \
         operators.operatorframework.io.bundle.channel.default.v1: stable\n",
    )
    .unwrap();
}

/// Every regular file under `root`, relative path → content (symlinks as `-> target`).
pub fn tree(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        for item in fs::read_dir(&dir).unwrap() {
            let item = item.unwrap();
            let path = item.path();
            let relative = path.strip_prefix(root).unwrap().to_owned();
            let kind = item.file_type().unwrap();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.insert(relative, format!("-> {}", target.display()).into_bytes());
            } else {
                out.insert(relative, fs::read(&path).unwrap());
            }
        }
    }
    out
}
