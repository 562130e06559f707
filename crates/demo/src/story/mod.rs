//! The demo itself: a private registry, the example operator pushed with the opcat CLI, an
//! in-memory stand-in for the Kubernetes API, the real `opcat run` against it, the
//! `deploy/examples/` manifests applied as an admin would, then a narrated account of what opcat
//! did, a pull-secret rotation and an uninstall. Every claim it prints is checked; a claim that
//! does not hold ends the demo with an error.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::cluster::{Cluster, ClusterError};
use crate::examples::{self, ExamplesError};
use crate::narrate::Narrator;
use crate::opcat_process::ProcessError;
use crate::publish::PublishError;

mod acts;
mod setup;

use acts::{rotate, show_install, uninstall};
use setup::{apply_examples, preflight, publish_examples, start_api, start_opcat, start_registry};

/// The namespace the widget operator is installed in (`deploy/examples`).
const NAMESPACE: &str = "widgets";
/// The CatalogSource's namespace and name (`deploy/examples/catalog-source.yaml`).
const CATALOG: (&str, &str) = ("opcat-catalogs", "opcat-examples");
/// The pull secret's name (`deploy/examples/pull-secret.yaml`).
const PULL_SECRET: &str = "example-registry-pull";
/// The Subscription (`deploy/examples/subscription.yaml`).
const SUBSCRIPTION: &str = "widget-operator";
/// An `imagePullSecrets` entry a user put on the namespace's `default` ServiceAccount.
const FOREIGN_ENTRY: &str = "team-registry";
/// The CRD the bundle owns, which uninstall keeps.
const CRD: &str = "CustomResourceDefinition widgets.example.opcat.dev";
/// Steps of the account.
const STEPS: usize = 8;

/// How to run the demo.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `opcat` binary.
    pub opcat: PathBuf,
    /// The repository (for `bundles/`, `catalog/`, `deploy/`).
    pub repo: PathBuf,
    /// How long any one wait may take.
    pub timeout: Duration,
    /// `RUST_LOG` for `opcat run`.
    pub log_filter: String,
}

/// What the demo showed.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The CSV installed.
    pub csv: String,
    /// How long the rotated credentials took to reach the copy.
    pub rotation: Duration,
    /// The whole demo.
    pub total: Duration,
}

/// Why the demo failed.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("`{tool}` is not installed; run scripts/install-test-deps.sh (scripts/demo.sh does)")]
    MissingTool { tool: String },
    #[error("{path} does not exist; {hint}")]
    Missing { path: PathBuf, hint: String },
    #[error("cannot create a temporary directory")]
    TempDir(#[source] std::io::Error),
    #[error("the registry did not start: {0}")]
    Registry(String),
    #[error("cannot serve the in-memory API over HTTP: {0}")]
    Http(String),
    #[error("{path} holds no valid CustomResourceDefinition: {message}")]
    Crds { path: PathBuf, message: String },
    #[error("installing CRD {name}")]
    InstallCrd {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Publish(#[from] PublishError),
    #[error(transparent)]
    Examples(#[from] ExamplesError),
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("{action} failed")]
    Api {
        action: String,
        #[source]
        source: kube::Error,
    },
    #[error("{claim} does not hold: {seen}")]
    Claim { claim: String, seen: String },
}

/// Fails with [`DemoError::Claim`] unless `holds`.
fn check(holds: bool, claim: &str, seen: impl FnOnce() -> String) -> Result<(), DemoError> {
    if holds {
        Ok(())
    } else {
        Err(DemoError::Claim {
            claim: claim.to_owned(),
            seen: seen(),
        })
    }
}

/// Runs the demo, writing the account to `out`. Everything it starts (registry, API server,
/// `opcat run`, temporary directory) is stopped and removed when it returns or is dropped.
pub async fn run(options: &Options, out: &mut dyn Write) -> Result<Summary, DemoError> {
    preflight(options)?;
    let mut say = Narrator::new(out, STEPS);
    say.say("opcat demo: install an operator from a private catalog, then rotate its pull secret and uninstall it.");
    say.say("Everything runs on this machine and is removed at the end.");

    let work = tempfile::Builder::new()
        .prefix("opcat-demo-")
        .tempdir()
        .map_err(DemoError::TempDir)?;
    let (registry, rotated_user) = start_registry(&mut say).await?;
    publish_examples(&mut say, options, &registry, work.path()).await?;
    let (api, http) = start_api(&mut say, options).await?;
    let cluster = Cluster {
        client: api.client(),
    };
    let mut opcat = start_opcat(&mut say, options, &registry, &http, work.path()).await?;

    let result = async {
        let manifests = examples::load(&options.repo.join("deploy/examples"), &registry.host)?;
        apply_examples(&mut say, &cluster, &manifests, &registry).await?;
        let csv = show_install(&mut say, &cluster, options.timeout).await?;
        let rotation = rotate(
            &mut say,
            &cluster,
            &manifests,
            &registry,
            &rotated_user,
            options.timeout,
        )
        .await?;
        uninstall(&mut say, &cluster, &csv, options.timeout).await?;
        Ok::<_, DemoError>((csv, rotation))
    }
    .await;
    let (csv, rotation) = match result {
        Ok(done) => done,
        Err(error) => {
            say.say(&format!(
                "\nopcat's log (last lines):\n{}",
                tail(&opcat.log(), 40)
            ));
            return Err(error);
        }
    };

    let status = opcat.terminate(Duration::from_secs(30)).await?;
    say.say(&format!(
        "\nopcat run stopped on SIGTERM with {status}; registry, API server and {} are removed now.",
        work.path().display()
    ));
    check(status.success(), "opcat exits 0 on SIGTERM", || {
        format!("{status}\n{}", tail(&opcat.log(), 40))
    })?;
    let total = say.elapsed();
    say.say(&format!(
        "\nopcat-demo: OK: {csv} installed from a private catalog; its pull secret copied, \
         attached, rotated in place ({:.2}s) and removed on uninstall; {:.1}s in all.",
        rotation.as_secs_f64(),
        total.as_secs_f64()
    ));
    drop((opcat, http, api, registry, work));
    Ok(Summary {
        csv,
        rotation,
        total,
    })
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
