//! Setting the stage: the tools checked, the registry started and the examples pushed, the
//! in-memory API server and `opcat run` started, the example manifests applied.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fake_apiserver::{FakeApiServer, HttpHandle};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use test_registry::{Auth, Distribution, User};

use crate::cluster::{Cluster, wait_for};
use crate::examples::{self, Manifest};
use crate::narrate::{self, Narrator, text};
use crate::opcat_process::{OpcatProcess, RunConfig};
use crate::publish::{self, PushConfig};

use super::{DemoError, FOREIGN_ENTRY, NAMESPACE, Options, PULL_SECRET};

pub(super) fn preflight(options: &Options) -> Result<(), DemoError> {
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
pub(super) async fn start_registry(
    say: &mut Narrator<'_>,
) -> Result<(Distribution, User), DemoError> {
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

pub(super) async fn publish_examples(
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

pub(super) async fn start_api(
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

pub(super) async fn start_opcat(
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

pub(super) async fn apply_examples(
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
