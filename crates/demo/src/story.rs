//! The demo itself: a private registry, the example operator pushed with the opcat CLI, an
//! in-memory stand-in for the Kubernetes API, the real `opcat run` against it, the
//! `deploy/examples/` manifests applied as an admin would, then a narrated account of what opcat
//! did, a pull-secret rotation and an uninstall. Every claim it prints is checked; a claim that
//! does not hold ends the demo with an error.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fake_apiserver::{FakeApiServer, HttpHandle};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use test_registry::{Auth, Distribution, User};

use crate::cluster::{Cluster, ClusterError, Olm, wait_for};
use crate::examples::{self, ExamplesError, Manifest};
use crate::inventory;
use crate::narrate::{self, Narrator, condition, text};
use crate::opcat_process::{OpcatProcess, ProcessError, RunConfig};
use crate::publish::{self, PublishError, PushConfig};

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

fn preflight(options: &Options) -> Result<(), DemoError> {
    if find_on_path("docker-registry").is_none() {
        return Err(DemoError::MissingTool {
            tool: "docker-registry".to_owned(),
        });
    }
    for (path, hint) in [
        (options.opcat.clone(), "build it: cargo build -p opcat"),
        (
            options.repo.join("deploy/examples/kustomization.yaml"),
            "pass --repo with the opcat repository",
        ),
    ] {
        if !path.exists() {
            return Err(DemoError::Missing {
                path,
                hint: hint.to_owned(),
            });
        }
    }
    Ok(())
}

fn find_on_path(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(tool))
        .find(|candidate| candidate.is_file())
}

/// The registry, and the second user the pull secret is rotated to.
async fn start_registry(say: &mut Narrator<'_>) -> Result<(Distribution, User), DemoError> {
    say.step("A private registry");
    let rotated = User::new("demo-rotated", &crate::random_password());
    let users = vec![
        User::new("demo-reader", &crate::random_password()),
        rotated.clone(),
    ];
    let registry = tokio::task::spawn_blocking(move || Distribution::start(Auth::Basic(users)))
        .await
        .map_err(|error| DemoError::Registry(error.to_string()))?;
    say.detail(&format!(
        "docker-registry (the CNCF distribution registry) on https://{}",
        registry.host
    ));
    say.detail("TLS with a CA made for this demo; htpasswd basic auth, users demo-reader and demo-rotated (random passwords)");
    Ok((registry, rotated))
}

async fn publish_examples(
    say: &mut Narrator<'_>,
    options: &Options,
    registry: &Distribution,
    work: &Path,
) -> Result<(), DemoError> {
    say.step("The example operator, pushed with the opcat CLI");
    let pull_secret = work.join("push-credentials.yaml");
    std::fs::write(
        &pull_secret,
        test_registry::pull_secret_yaml("demo-push", &registry.dockerconfigjson()),
    )
    .map_err(DemoError::TempDir)?;
    let config = PushConfig {
        opcat: options.opcat.clone(),
        registry_host: registry.host.clone(),
        pull_secret,
        ca_file: registry.ca.ca_pem.clone(),
    };
    say.detail(&format!(
        "opcat bundle push / opcat catalog push DIR IMAGE --pull-secret FILE --ca-file CA, \
         with localhost:5000 rewritten to {}",
        registry.host
    ));
    let repo = options.repo.clone();
    let work = work.join("content");
    let pushed = tokio::task::spawn_blocking(move || publish::push_examples(&config, &repo, &work))
        .await
        .map_err(|error| DemoError::Registry(error.to_string()))??;
    let mut stand_ins = 0;
    for image in &pushed {
        if image.what.contains("stand-in") {
            stand_ins += 1;
            continue;
        }
        say.sub(&format!(
            "{:<26} {}  {}",
            image.what,
            image.image,
            narrate::short_digest(&image.digest)
        ));
    }
    say.sub(&format!(
        "and {stand_ins} stand-ins for the operator images the bundles name (nothing runs them here)"
    ));
    Ok(())
}

async fn start_api(
    say: &mut Narrator<'_>,
    options: &Options,
) -> Result<(FakeApiServer, HttpHandle), DemoError> {
    say.step("A stand-in for the cluster");
    let api = FakeApiServer::new();
    let http = api
        .serve_http()
        .await
        .map_err(|error| DemoError::Http(error.to_string()))?;
    say.detail(&format!(
        "IN-MEMORY STAND-IN for a Kubernetes API server (crates/fake-apiserver) on {}",
        http.url()
    ));
    say.detail("It is not a cluster: no kubelet, no pods. Deployments report Available at once;");
    say.detail("namespaces, ServiceAccounts, garbage collection and CRDs behave as in Kubernetes.");
    let path = options.repo.join("deploy/crds/crds.yaml");
    let text = std::fs::read_to_string(&path).map_err(|error| DemoError::Crds {
        path: path.clone(),
        message: error.to_string(),
    })?;
    let crds: Vec<CustomResourceDefinition> =
        serde_saphyr::from_multiple(&text).map_err(|error| DemoError::Crds {
            path: path.clone(),
            message: error.to_string(),
        })?;
    let crd_api: Api<CustomResourceDefinition> = Api::all(api.client());
    let mut names = Vec::new();
    for crd in &crds {
        let name = crd.name_any();
        crd_api
            .create(&PostParams::default(), crd)
            .await
            .map_err(|source| DemoError::InstallCrd {
                name: name.clone(),
                source,
            })?;
        names.push(name);
    }
    say.detail("opcat's CRDs from deploy/crds/crds.yaml:");
    say.sub(&names.join(", "));
    Ok((api, http))
}

async fn start_opcat(
    say: &mut Narrator<'_>,
    options: &Options,
    registry: &Distribution,
    http: &HttpHandle,
    work: &Path,
) -> Result<OpcatProcess, DemoError> {
    say.step("opcat run, the real binary");
    let cache_dir = work.join("cache");
    std::fs::create_dir_all(&cache_dir).map_err(DemoError::TempDir)?;
    let config = RunConfig {
        binary: options.opcat.clone(),
        kubeconfig: http.kubeconfig_path().to_owned(),
        ca_files: vec![registry.ca.ca_pem.clone()],
        cache_dir,
        admin_address: std::net::SocketAddr::from(([127, 0, 0, 1], test_registry::free_port())),
        log_filter: options.log_filter.clone(),
        log_file: work.join("opcat.log"),
        extra_args: Vec::new(),
    };
    let started = Instant::now();
    let mut opcat = OpcatProcess::start(&config)?;
    say.detail(&format!(
        "KUBECONFIG=<the stand-in> {} run --ca-file <the registry's CA> --cache-dir <tmp> \
         --admin-address {}   (pid {})",
        options.opcat.display(),
        config.admin_address,
        opcat.pid()
    ));
    opcat.wait_reconciling(options.timeout).await?;
    say.detail(&format!(
        "ready after {:.1}s: /readyz says \"reconciling\" (every watch listed)",
        started.elapsed().as_secs_f64()
    ));
    Ok(opcat)
}

async fn apply_examples(
    say: &mut Narrator<'_>,
    cluster: &Cluster,
    manifests: &[Manifest],
    registry: &Distribution,
) -> Result<(), DemoError> {
    say.step(
        "An admin applies deploy/examples (the widgets part), as with kubectl apply --server-side",
    );
    say.detail(&format!(
        "localhost:5000 rewritten to {}; the pull Secret gets demo-reader's credentials",
        registry.host
    ));
    for mut manifest in examples::from_files(manifests, &["namespaces.yaml", "pull-secret.yaml"]) {
        if manifest.kind() == "Secret" {
            examples::set_dockerconfigjson(&mut manifest, &registry.dockerconfigjson());
        }
        examples::apply(&cluster.client, &manifest).await?;
        say.sub(&format!("applied {}", manifest.describe()));
    }

    // Before anything is installed, a user lists their own pull secret on the namespace's
    // default ServiceAccount; opcat must keep it in place.
    wait_for(
        "the default ServiceAccount of widgets",
        Duration::from_secs(30),
        || async {
            let found = cluster.get::<ServiceAccount>(NAMESPACE, "default").await?;
            Ok(found.map(|_| ()).ok_or_else(|| "absent".to_owned()))
        },
    )
    .await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    accounts
        .patch(
            "default",
            &PatchParams::default(),
            &Patch::Merge(json!({"imagePullSecrets": [{"name": FOREIGN_ENTRY}]})),
        )
        .await
        .map_err(|source| DemoError::Api {
            action: "adding a user's entry to widgets/default".to_owned(),
            source,
        })?;
    say.sub(&format!(
        "a user's own entry: ServiceAccount widgets/default imagePullSecrets [{FOREIGN_ENTRY}]"
    ));

    for manifest in examples::from_files(
        manifests,
        &[
            "catalog-source.yaml",
            "operator-group.yaml",
            "subscription.yaml",
        ],
    ) {
        examples::apply(&cluster.client, &manifest).await?;
        let what = match manifest.kind() {
            "CatalogSource" => format!(
                "image {}, spec.secrets [{}]",
                text(&manifest.object, "/spec/image"),
                PULL_SECRET
            ),
            "OperatorGroup" => "targetNamespaces [widgets] (OwnNamespace)".to_owned(),
            "Subscription" => format!(
                "package {}, channel {}, {} approval",
                text(&manifest.object, "/spec/name"),
                text(&manifest.object, "/spec/channel"),
                text(&manifest.object, "/spec/installPlanApproval")
            ),
            _ => String::new(),
        };
        say.sub(&format!("applied {}: {what}", manifest.describe()));
    }
    Ok(())
}

/// Waits for the install and prints what opcat did; returns the installed CSV's name.
async fn show_install(
    say: &mut Narrator<'_>,
    cluster: &Cluster,
    timeout: Duration,
) -> Result<String, DemoError> {
    say.step("What opcat did");
    let started = Instant::now();
    let catalog = cluster
        .wait_olm(
            (Olm::CatalogSource, CATALOG.0, CATALOG.1),
            "the CatalogSource to be READY",
            timeout,
            |c| text(c, "/status/connectionState/lastObservedState") == "READY",
        )
        .await?;
    say.detail(&format!(
        "CatalogSource {}/{}: {}   (after {:.1}s)",
        CATALOG.0,
        CATALOG.1,
        narrate::catalog_source(&catalog),
        started.elapsed().as_secs_f64()
    ));
    say.sub(&format!(
        "pulled with the credentials of Secret {}/{PULL_SECRET}",
        CATALOG.0
    ));

    let subscription = cluster
        .wait_olm(
            (Olm::Subscription, NAMESPACE, SUBSCRIPTION),
            "the Subscription to be AtLatestKnown with PullCredentialsReady",
            timeout,
            |s| {
                text(s, "/status/state") == "AtLatestKnown"
                    && condition(s, "PullCredentialsReady").is_some()
            },
        )
        .await?;
    let csv_name = text(&subscription, "/status/installedCSV").to_owned();
    let csv = cluster
        .wait_olm(
            (Olm::ClusterServiceVersion, NAMESPACE, &csv_name),
            "the CSV to succeed",
            timeout,
            |c| text(c, "/status/phase") == "Succeeded",
        )
        .await?;
    say.detail(&format!(
        "Subscription {NAMESPACE}/{SUBSCRIPTION}: state {}, installedCSV {csv_name}   (after {:.1}s)",
        text(&subscription, "/status/state"),
        started.elapsed().as_secs_f64()
    ));
    let (status, reason, message) =
        condition(&subscription, "PullCredentialsReady").unwrap_or_default();
    say.sub(&format!(
        "PullCredentialsReady={status} ({reason}): {message}"
    ));
    check(status == "True", "PullCredentialsReady is True", || {
        format!("{status} {reason}: {message}")
    })?;
    let plan = text(&subscription, "/status/installPlanRef/name").to_owned();
    if let Some(plan) = cluster.olm(Olm::InstallPlan, NAMESPACE, &plan).await? {
        say.detail(&format!(
            "InstallPlan {NAMESPACE}/{}: {} ({} approval)",
            text(&plan, "/metadata/name"),
            text(&plan, "/status/phase"),
            text(&plan, "/spec/approval")
        ));
    }
    say.detail(&format!(
        "ClusterServiceVersion {NAMESPACE}/{csv_name}: {} ({})",
        text(&csv, "/status/phase"),
        text(&csv, "/status/message")
    ));

    let copies: Vec<Secret> = cluster
        .list(Some(NAMESPACE), "opcat.dev/managed=true")
        .await?;
    check(
        copies.len() == 1,
        "one copy of the pull secret in widgets",
        || {
            format!(
                "{:?}",
                copies.iter().map(|c| c.name_any()).collect::<Vec<_>>()
            )
        },
    )?;
    let copy = copies[0].name_any();
    say.detail("The pull secret, copied into the install namespace:");
    for line in narrate::copy(&copies[0]) {
        say.sub(&line);
    }

    say.detail("Deployments (their pod templates list the copy too: the ServiceAccount admission");
    say.detail("plugin adds ServiceAccount secrets only to pods that list none of their own):");
    let deployments: Vec<Deployment> = cluster.list(Some(NAMESPACE), "").await?;
    for deployment in &deployments {
        for line in narrate::deployment(deployment) {
            say.sub(&line);
        }
        let listed = deployment
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|p| p.image_pull_secrets.as_ref())
            .is_some_and(|list| list.iter().any(|e| e.name == copy));
        check(
            listed,
            &format!("Deployment {} lists the copy", deployment.name_any()),
            || format!("{:?}", narrate::deployment(deployment)),
        )?;
    }

    say.detail("ServiceAccounts (every one the bundle uses, including default):");
    let accounts: Vec<ServiceAccount> = cluster.list(Some(NAMESPACE), "").await?;
    for account in &accounts {
        say.sub(&narrate::service_account(account));
        let names = narrate::pull_secret_names(account);
        check(
            names.contains(&copy),
            &format!("ServiceAccount {} lists the copy", account.name_any()),
            || format!("{names:?}"),
        )?;
    }
    let default = accounts.iter().find(|a| a.name_any() == "default");
    let default_names = default.map(narrate::pull_secret_names).unwrap_or_default();
    check(
        default_names.first().map(String::as_str) == Some(FOREIGN_ENTRY),
        "the user's entry on default is kept first",
        || format!("{default_names:?}"),
    )?;
    Ok(csv_name)
}

/// Re-applies the pull Secret with the other user's credentials and times the copy's update.
async fn rotate(
    say: &mut Narrator<'_>,
    cluster: &Cluster,
    manifests: &[Manifest],
    registry: &Distribution,
    next_user: &User,
    timeout: Duration,
) -> Result<Duration, DemoError> {
    say.step("The admin rotates the pull secret");
    let copies: Vec<Secret> = cluster
        .list(Some(NAMESPACE), "opcat.dev/managed=true")
        .await?;
    let before = copies.into_iter().next().ok_or_else(|| DemoError::Claim {
        claim: "a copy exists before the rotation".to_owned(),
        seen: "none".to_owned(),
    })?;
    let copy = before.name_any();
    let rotated =
        test_registry::dockerconfigjson(&registry.host, &next_user.username, &next_user.password);
    let mut secret = examples::from_files(manifests, &["pull-secret.yaml"]).remove(0);
    examples::set_dockerconfigjson(&mut secret, &rotated);
    let started = Instant::now();
    examples::apply(&cluster.client, &secret).await?;
    say.detail(&format!(
        "applied Secret {}/{PULL_SECRET} with demo-rotated's credentials",
        CATALOG.0
    ));
    let after = wait_for("the copy to carry the rotated data", timeout, || async {
        let found = cluster.get::<Secret>(NAMESPACE, &copy).await?;
        Ok(match found {
            Some(s) if data_is(&s, &rotated) => Ok(s),
            Some(s) => Err(format!(
                "copy at resourceVersion {:?}",
                s.metadata.resource_version
            )),
            None => Err("copy absent".to_owned()),
        })
    })
    .await?;
    let took = started.elapsed();
    say.detail(&format!(
        "copy {NAMESPACE}/{copy} updated in place after {:.2}s: uid {} (unchanged), \
         resourceVersion {} -> {}",
        took.as_secs_f64(),
        after.uid().unwrap_or_default(),
        before.resource_version().unwrap_or_default(),
        after.resource_version().unwrap_or_default()
    ));
    say.sub("its data now equals the rotated source (compared here, never printed)");
    check(
        after.uid() == before.uid(),
        "the copy keeps its uid",
        || format!("{:?} -> {:?}", before.uid(), after.uid()),
    )?;
    Ok(took)
}

fn data_is(secret: &Secret, dockerconfigjson: &str) -> bool {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(".dockerconfigjson"))
        .is_some_and(|value| value.0 == dockerconfigjson.as_bytes())
}

/// Deletes the Subscription, then the CSV, and shows what is left.
async fn uninstall(
    say: &mut Narrator<'_>,
    cluster: &Cluster,
    csv: &str,
    timeout: Duration,
) -> Result<(), DemoError> {
    say.step("Uninstall: delete the Subscription, then the CSV (as in OLM)");
    let before = inventory::marked_by_opcat(cluster).await?;
    let started = Instant::now();
    cluster
        .olm_delete(Olm::Subscription, NAMESPACE, SUBSCRIPTION)
        .await?;
    cluster
        .olm_delete(Olm::ClusterServiceVersion, NAMESPACE, csv)
        .await?;
    let expected: BTreeSet<String> = [CRD.to_owned()].into();
    let left = wait_for("only the CRD to be left", timeout, || async {
        let now = inventory::marked_by_opcat(cluster).await?;
        Ok(if now == expected {
            Ok(now)
        } else {
            Err(format!("{now:?}"))
        })
    })
    .await?;
    say.detail(&format!(
        "done after {:.1}s; removed by opcat's finalizer (or, for objects it owns, the garbage collector):",
        started.elapsed().as_secs_f64()
    ));
    // The namespace's `default` ServiceAccount is not opcat's: it loses only opcat's entry and
    // annotation (shown below), it is not removed.
    let default_account = format!("ServiceAccount {NAMESPACE}/default");
    let gone: BTreeSet<String> = before
        .difference(&left)
        .filter(|entry| **entry != default_account)
        .cloned()
        .collect();
    for line in inventory::by_kind(&gone) {
        say.sub(&line);
    }
    say.detail(&format!(
        "left: {CRD} (CRDs are never deleted: that would delete every Widget)"
    ));
    let default = cluster.get::<ServiceAccount>(NAMESPACE, "default").await?;
    let names = default
        .as_ref()
        .map(narrate::pull_secret_names)
        .unwrap_or_default();
    say.detail(&format!(
        "ServiceAccount {NAMESPACE}/default (not opcat's, kept): imagePullSecrets [{}]: opcat's \
         entry removed, the user's entry survived",
        names.join(", ")
    ));
    check(
        names == [FOREIGN_ENTRY],
        "only the user's entry is left on default",
        || format!("{names:?}"),
    )?;
    let source = cluster.get::<Secret>(CATALOG.0, PULL_SECRET).await?;
    check(source.is_some(), "the source Secret is untouched", || {
        "deleted".to_owned()
    })?;
    Ok(())
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
