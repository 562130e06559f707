//! Least-privilege sweep (issue 23), run by `scripts/bench-least-privilege.sh`: every bundle of
//! the shared certified-operators v4.16 catalog installed alone in a namespace, with a catalog
//! pull secret holding the four registries of an OpenShift global pull secret. For each bundle,
//! the entries its copy would hold, computed by the production code that computes real copies:
//! the bundle loaded from its `olm.bundle.object` manifests as opcat loads embedded bundles
//! (`Bundle::from_manifests`), its images (`bundle::images`: containers, init containers,
//! `relatedImages`), the copy's scope and data (`CopyScope::of`, `scope_source`), and the
//! preflight's keyring lookup for images no entry covers ("no credentials, assumed public").
//!
//! Prints Markdown tables: how many bundles get 0..4 entries, how many need more than one
//! registry, which registries are needed how often, and the registries of images no entry
//! covers. It also estimates the limit of scoping: image references in the Deployments'
//! environment values (`RELATED_IMAGE_*` and the like) that the bundle does not declare, and
//! how many of them the whole secret would cover but the scoped copy does not (the operators
//! that would need the opt-out or a fixed bundle).
//!
//! `cargo test --benches` runs the same sweep on the first packages only (a smoke, so the
//! driver cannot rot); with `--bench` (passed by `cargo bench`, and by the script) it sweeps
//! the whole catalog. Not a timed test: nothing here is measured against a target.
// Benchmark driver: failing loudly is the right behaviour.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use opcat::bundle::Bundle;
use opcat::fbc::Catalog;
use opcat::pull_secrets::{CopyScope, scope_source};
use opcat::registry::{ImageRef, Keyring, PullSecret};

/// The registries of an OpenShift cluster's global pull secret (issue 23).
const REGISTRIES: [&str; 4] = [
    "cloud.openshift.com",
    "quay.io",
    "registry.redhat.io",
    "registry.connect.redhat.com",
];

/// Packages the smoke run (`cargo test --benches`) sweeps.
const SMOKE_PACKAGES: usize = 3;

/// The four-registry source: placeholder credentials (the sweep never contacts a registry).
fn source() -> Secret {
    let auths: serde_json::Map<String, serde_json::Value> = REGISTRIES
        .iter()
        .map(|registry| {
            let auth = base64::engine::general_purpose::STANDARD.encode(format!("user:{registry}"));
            ((*registry).to_owned(), serde_json::json!({ "auth": auth }))
        })
        .collect();
    let document = serde_json::json!({ "auths": auths });
    Secret {
        metadata: ObjectMeta {
            name: Some("pull-secret".to_owned()),
            namespace: Some("openshift-marketplace".to_owned()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".to_owned()),
        data: Some(BTreeMap::from([(
            ".dockerconfigjson".to_owned(),
            ByteString(document.to_string().into_bytes()),
        )])),
        ..Secret::default()
    }
}

/// What one bundle's copy holds.
struct Swept {
    /// Registry keys of the source the copy holds.
    registries: Vec<String>,
    /// Registries (hosts) of the bundle's images that no entry covers: assumed public.
    uncovered: BTreeSet<String>,
    /// Images that do not parse as references (no kubelet could pull them).
    unparsable: usize,
    /// Image references in environment values that the bundle does not declare.
    undeclared: usize,
    /// Of those, the ones the whole source covers but the scoped copy does not.
    lost: usize,
}

/// References with an explicit registry host in the values of the Deployments' environment
/// variables (where operators name operand images) that are not among `images`.
fn undeclared_images(bundle: &Bundle, images: &BTreeSet<String>) -> Vec<ImageRef> {
    let values: BTreeSet<&str> = opcat::bundle::images::containers(&bundle.csv.spec)
        .flat_map(|container| container.env.iter().flatten())
        .filter_map(|env| env.value.as_deref())
        .map(str::trim)
        .filter(|value| !images.contains(*value) && !value.contains(char::is_whitespace))
        .filter(|value| {
            value
                .split_once('/')
                .is_some_and(|(host, _)| host.contains(['.', ':']))
        })
        .collect();
    values
        .into_iter()
        .filter_map(|value| value.parse().ok())
        .collect()
}

/// The keyring the preflight would build from `secret`.
fn keyring_of(secret: &Secret) -> Keyring {
    let (keyring, errors) = Keyring::from_secrets([&PullSecret::from(secret)]);
    assert!(errors.is_empty(), "the secret is usable: {errors:?}");
    keyring
}

fn sweep_bundle(bundle: &Bundle, source: &Secret, keyring: &Keyring) -> Swept {
    let images = opcat::bundle::images(bundle);
    let scope = CopyScope::of(None, images.iter().map(String::as_str));
    let scoped = scope_source(source, &scope).expect("the source is a readable pull secret");
    // A source none of whose entries is needed is not copied: no credential at all.
    let copy_keyring = if scoped.is_empty() {
        Keyring::empty()
    } else {
        keyring_of(&Secret {
            data: Some(scoped.data.clone()),
            ..source.clone()
        })
    };
    let undeclared = undeclared_images(bundle, &images);
    let lost = undeclared
        .iter()
        .filter(|image| !keyring.lookup(image).is_empty() && copy_keyring.lookup(image).is_empty())
        .count();
    let mut uncovered = BTreeSet::new();
    let mut unparsable = 0;
    for image in &images {
        match image.parse::<ImageRef>() {
            Ok(reference) if keyring.lookup(&reference).is_empty() => {
                uncovered.insert(reference.registry().to_owned());
            }
            Ok(_) => {}
            Err(_) => unparsable += 1,
        }
    }
    Swept {
        registries: scoped.registries,
        uncovered,
        unparsable,
        undeclared: undeclared.len(),
        lost,
    }
}

/// The bundle from the manifests the catalog embeds, as opcat loads embedded bundles.
fn load(bundle: &opcat::fbc::Bundle) -> Result<Bundle, String> {
    let manifests = bundle
        .objects()
        .map(|object| object.manifest().map_err(|error| error.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let source = format!("bundle {} embedded in the catalog", bundle.name);
    Bundle::from_manifests(&source, manifests).map_err(|error| error.to_string())
}

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let dir = test_registry::shared_data_dir().join("fbc/large/certified-operators/catalogs/v4.16");
    let catalog = Catalog::load(&dir).unwrap();
    let source = source();
    // The preflight's keyring: built from the copies' sources.
    let keyring = keyring_of(&source);

    let packages: Vec<_> = if full {
        catalog.packages().collect()
    } else {
        catalog.packages().take(SMOKE_PACKAGES).collect()
    };
    let mut by_entries = [0usize; REGISTRIES.len() + 1];
    let mut by_registry: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_uncovered: BTreeMap<String, usize> = BTreeMap::new();
    let (mut bundles, mut several, mut uncovered, mut unparsable) = (0, 0, 0, 0);
    let (mut undeclared, mut lost) = (0, 0);
    let mut failed = Vec::new();
    for package in &packages {
        for bundle in package.bundles() {
            bundles += 1;
            let loaded = match load(bundle) {
                Ok(loaded) => loaded,
                Err(error) => {
                    failed.push(format!("{}: {error}", bundle.name));
                    continue;
                }
            };
            let swept = sweep_bundle(&loaded, &source, &keyring);
            by_entries[swept.registries.len()] += 1;
            several += usize::from(swept.registries.len() > 1);
            for registry in swept.registries {
                *by_registry.entry(registry).or_default() += 1;
            }
            uncovered += usize::from(!swept.uncovered.is_empty());
            for registry in swept.uncovered {
                *by_uncovered.entry(registry).or_default() += 1;
            }
            unparsable += usize::from(swept.unparsable > 0);
            undeclared += usize::from(swept.undeclared > 0);
            lost += usize::from(swept.lost > 0);
        }
    }
    let swept = bundles - failed.len();

    println!(
        "certified-operators v4.16: {bundles} bundles in {} packages; source entries: {}",
        packages.len(),
        REGISTRIES.join(", ")
    );
    println!();
    println!("| entries in the copy | bundles |");
    println!("|---|---|");
    for (entries, count) in by_entries.iter().enumerate() {
        println!("| {entries} | {count} |");
    }
    println!("| bundles needing more than one registry | {several} |");
    println!("| bundles with an image no entry covers (assumed public) | {uncovered} |");
    println!("| bundles with an image reference that does not parse | {unparsable} |");
    println!("| bundles whose manifests do not load | {} |", failed.len());
    println!("| bundles naming undeclared images in environment values | {undeclared} |");
    println!("| bundles with an undeclared image the scoped copy does not cover | {lost} |");
    println!();
    println!("| registry entry | bundles whose copy holds it |");
    println!("|---|---|");
    for registry in REGISTRIES {
        let count = by_registry.get(registry).copied().unwrap_or_default();
        println!("| {registry} | {count} |");
    }
    println!();
    println!("| image registry no entry covers | bundles |");
    println!("|---|---|");
    let mut ranked: Vec<_> = by_uncovered.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    for (registry, count) in ranked {
        println!("| {registry} | {count} |");
    }
    for failure in &failed {
        eprintln!("not loaded: {failure}");
    }

    assert!(swept > 0, "no bundle was swept");
    assert_eq!(by_entries.iter().sum::<usize>(), swept);
    if full {
        // The catalog issue 23 names: every bundle of it is swept.
        assert_eq!(bundles, 379, "the shared certified-operators v4.16 catalog");
    }
}
