//! Catalogs whose operators depend on each other, built from the example catalog: the widget
//! operator made to require the gadget operator (by package range or by API), the gadget
//! operator served from other CatalogSources (a private one with its own pull secret and its own
//! copies of the images, or a priority), and the CatalogSources and Secrets that serve them.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::Path;

use kube::ResourceExt;
use opcat::api::{CatalogSource, CatalogSourceSpec, Subscription};
use opcat::fbc::DeclarativeConfig;
use opcat::fbc::property::{Gvk, PackageRequired, Property};
use opcat::registry::{ImageRef, Keyring};

use crate::subscription_support::{
    CATALOG_NAMESPACE, Fixture, NAMESPACE, full_catalog, push_catalog_image, wait_catalog_ready,
};
use crate::support::{Env, copy_rewritten};

/// The dependency.
pub const GADGET: &str = "gadget-operator";
/// The operator that needs it.
pub const WIDGET: &str = "widget-operator";
/// The widget operator's channel head.
pub const WIDGET_HEAD: &str = "widget-operator.v1.2.0";
/// The gadget operator's channel head.
pub const GADGET_HEAD: &str = "gadget-operator.v0.2.0";
/// The gadget operator's first release (the head replaces it).
pub const GADGET_FIRST: &str = "gadget-operator.v0.1.0";
/// The API the gadget operator provides.
pub fn gadget_api() -> Gvk {
    Gvk {
        group: "example.opcat.dev".into(),
        kind: "Gadget".into(),
        version: "v1alpha1".into(),
    }
}

/// The example catalog with `package`'s entries removed.
pub fn without(mut config: DeclarativeConfig, package: &str) -> DeclarativeConfig {
    config.packages.retain(|p| p.name != package);
    config.channels.retain(|c| c.package != package);
    config.bundles.retain(|b| b.package != package);
    config
}

/// `config` without the bundle `name` (nor its channel entries).
pub fn without_bundle(mut config: DeclarativeConfig, name: &str) -> DeclarativeConfig {
    for channel in &mut config.channels {
        channel.entries.retain(|entry| entry.name != name);
    }
    config.bundles.retain(|b| b.name != name);
    config
}

/// Only `package` of `config`.
pub fn only(mut config: DeclarativeConfig, package: &str) -> DeclarativeConfig {
    config.packages.retain(|p| p.name == package);
    config.channels.retain(|c| c.package == package);
    config.bundles.retain(|b| b.package == package);
    config
}

/// `config` with `property` added to every bundle of `package`.
pub fn requiring(
    mut config: DeclarativeConfig,
    package: &str,
    property: Property,
) -> DeclarativeConfig {
    for bundle in config.bundles.iter_mut().filter(|b| b.package == package) {
        bundle.properties.push(property.clone());
    }
    config
}

/// `olm.package.required` of `package` in `range`.
pub fn package_required(package: &str, range: &str) -> Property {
    Property::PackageRequired(PackageRequired {
        package_name: package.into(),
        version_range: range.into(),
    })
}

/// The example catalog where every widget-operator bundle requires `property`, with or without
/// the gadget operator.
pub fn widgets_requiring(env: &Env, property: Property, with_gadgets: bool) -> DeclarativeConfig {
    let config = requiring(full_catalog(env), WIDGET, property);
    if with_gadgets {
        config
    } else {
        without(config, GADGET)
    }
}

/// `config` with every image of its bundles moved from `opcat-examples/` to `repository/`.
pub fn moved_to(config: DeclarativeConfig, repository: &str) -> DeclarativeConfig {
    let text = {
        let mut json = Vec::new();
        opcat::fbc::render::render(&config, &mut json).expect("render");
        String::from_utf8(json).expect("utf-8")
    };
    let moved = text.replace("/opcat-examples/", &format!("/{repository}/"));
    DeclarativeConfig::parse(&moved, Path::new("moved.json")).expect("moved catalog")
}

/// Pushes the gadget operator's bundles and operator images to `repository/` (bundle manifests
/// rewritten to run `repository/gadget-operator`) with `keyring`.
pub async fn push_gadgets_to(env: &Env, repository: &str, keyring: &Keyring) {
    let source = env.images.bundles_dir.join(GADGET);
    let moved = env
        .registry
        .scratch(&format!("{repository}-gadget-bundles"));
    copy_rewritten(&source, &moved, &env.registry.host);
    for version in std::fs::read_dir(&moved).expect("versions") {
        let dir = version.expect("entry").path();
        rewrite_tree(&dir, "/opcat-examples/", &format!("/{repository}/"));
        let tag = dir.file_name().unwrap().to_str().unwrap().to_owned();
        let built = opcat::registry::push::build_bundle_image(&dir).expect("build bundle");
        for image in [
            format!("{repository}/{GADGET}-bundle:v{tag}"),
            format!("{repository}/{GADGET}:v{tag}"),
        ] {
            let reference: ImageRef = env.registry.image(&image).parse().unwrap();
            env.opcat_registry
                .push(&reference, &built, keyring)
                .await
                .expect("push gadget image");
        }
    }
}

fn rewrite_tree(dir: &Path, from: &str, to: &str) {
    for entry in std::fs::read_dir(dir).expect("dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rewrite_tree(&path, from, to);
        } else {
            let text = std::fs::read_to_string(&path).expect("read");
            std::fs::write(&path, text.replace(from, to)).expect("write");
        }
    }
}

/// A CatalogSource to serve a catalog from: `namespace/name`, pushed as
/// `repository/catalog:<variant>` with `keyring`, naming `secrets`, with `priority`.
pub struct Served<'a> {
    pub at: (&'a str, &'a str),
    pub repository: &'a str,
    pub variant: &'a str,
    pub keyring: &'a Keyring,
    pub secrets: &'a [&'a str],
    pub priority: Option<i64>,
}

impl Served<'_> {
    /// Publishes `config` and creates the CatalogSource; waits until it is served.
    pub async fn serve(&self, env: &Env, config: DeclarativeConfig) {
        let (namespace, name) = self.at;
        let image = env
            .registry
            .image(&format!("{}/catalog:{}", self.repository, self.variant));
        let digest = push_catalog_image(env, config, &image, self.variant, self.keyring).await;
        let mut catalog = CatalogSource::new(
            name,
            CatalogSourceSpec {
                source_type: "grpc".into(),
                image: Some(image),
                secrets: Some(self.secrets.iter().map(|s| (*s).to_owned()).collect()),
                priority: self.priority,
                ..CatalogSourceSpec::default()
            },
        );
        catalog.metadata.namespace = Some(namespace.into());
        env.create(&catalog).await;
        wait_catalog_ready(env, namespace, name, &digest).await;
    }
}

/// Publishes the example catalog with every widget-operator bundle requiring the gadget
/// operator (any version), with or without the gadget operator, and subscribes `widgets` to the
/// widget operator.
pub async fn subscribe_widgets_needing_gadgets(fixture: &Fixture, with_gadgets: bool) {
    fixture
        .load_catalog(
            widgets_requiring(
                &fixture.env,
                package_required(GADGET, ">=0.1.0"),
                with_gadgets,
            ),
            if with_gadgets {
                "needs-gadgets"
            } else {
                "needs-gadgets-elsewhere"
            },
        )
        .await;
    fixture.subscribe("widgets", |_| {}).await;
}

/// The Subscriptions in the test namespace, by name.
pub fn subscriptions(fixture: &Fixture) -> Vec<String> {
    let mut names: Vec<String> = fixture
        .env
        .api
        .list::<Subscription>(Some(NAMESPACE))
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    names.sort();
    names
}

/// The Subscription OLM names for a dependency on `package` from channel `channel` of
/// `namespace/catalog`.
pub fn dependency_subscription(package: &str, channel: &str, catalog: (&str, &str)) -> String {
    opcat::controller::subscription::dependency_subscriptions::dependency_subscription_name(
        package, channel, catalog.1, catalog.0,
    )
}

/// The global catalog namespace of the fixtures (where `olm/examples` lives).
pub const GLOBAL: &str = CATALOG_NAMESPACE;
