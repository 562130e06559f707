//! `opcat bundle render DIR|IMAGE --namespace NS ...`: the objects opcat would apply for one
//! install, through the renderer the controller uses ([`crate::bundle::render()`]), as a YAML
//! stream in apply order; the pull-secret copies and their attachments by name only.

use std::collections::BTreeMap;

use kube::api::DynamicObject;

use super::CliResult;
use super::bundle_validate::local_bundle;
use super::catalog::write_stdout;
use super::registry_args::RegistryArgs;
use crate::api::cluster_service_version::InstallModeType;
use crate::bundle::annotations::BundleAnnotations;
use crate::bundle::kinds::SERVICE_ACCOUNT;
use crate::bundle::ownership::CsvOwner;
use crate::bundle::render::ServingCertificate;
use crate::bundle::serving::served_deployments;
use crate::bundle::{Bundle, RenderContext, TargetNamespaces, render};
use crate::pull_secrets::names::{copy_name, is_dns1123_subdomain};
use crate::registry::secret_file::read_pull_secret_file;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Install modes, as OperatorGroups select them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "PascalCase")]
pub enum Mode {
    /// The operator watches its own namespace.
    OwnNamespace,
    /// The operator watches one other namespace (--target-namespaces).
    SingleNamespace,
    /// The operator watches several namespaces (--target-namespaces).
    MultiNamespace,
    /// The operator watches every namespace.
    AllNamespaces,
}

/// Arguments of `bundle render`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
--pull-secret FILE|NAME names a Secret of the CatalogSource's spec.secrets: a Secret manifest \
file (its credentials also pull IMAGE; its metadata.name is the Secret's name) or just the \
Secret's name. opcat copies each into the install namespace under a name derived from the \
CatalogSource (--catalog) and the Secret, attaches the copies to every ServiceAccount the bundle \
uses and lists them in every Deployment's pod template. The copies are shown by name only: their \
data is the source's, matched to the operator's images, and never printed. Serving certificates \
of webhooks and API services are issued at install; their caBundle is empty here.")]
pub struct RenderArgs {
    /// The bundle: a directory with manifests/ and metadata/, or a bundle image (an image must
    /// name a registry host, a tag or a digest).
    #[arg(value_name = "DIR|IMAGE")]
    pub bundle: String,
    /// The install namespace (the Subscription's and the OperatorGroup's).
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: String,
    /// The install mode; default: AllNamespaces when the CSV supports it, else OwnNamespace, or
    /// the namespaces of --target-namespaces.
    #[arg(long, value_enum, value_name = "MODE")]
    pub install_mode: Option<Mode>,
    /// The namespaces the operator watches (SingleNamespace, MultiNamespace), comma-separated
    /// or repeated.
    #[arg(long, value_name = "NAMESPACE", value_delimiter = ',')]
    pub target_namespaces: Vec<String>,
    /// The CatalogSource the pull secrets belong to, NAMESPACE/NAME (copy names depend on it).
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub catalog: Option<String>,
    /// Name of the OperatorGroup (`olm.operatorGroup` annotation).
    #[arg(long, value_name = "NAME", default_value = "operator-group")]
    pub operator_group: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// Runs `bundle render`.
pub async fn render_bundle(args: RenderArgs) -> CliResult {
    let secrets = secret_names(&args.registry)?;
    let copies = copy_names(args.catalog.as_deref(), &secrets)?;
    let mut registry = args.registry.clone();
    registry.pull_secrets.retain(|path| path.is_file());
    let local = local_bundle(&args.bundle, &registry).await?;
    let dir = local.dir.clone();
    let bundle = tokio::task::spawn_blocking(move || load(&dir))
        .await
        .map_err(|e| format!("bundle load task failed: {e}"))??;
    let targets = targets(&args, &bundle)?;
    let owner = CsvOwner {
        name: bundle.name().to_owned(),
        uid: String::new(),
    };
    let serving: BTreeMap<String, ServingCertificate> = served_deployments(&bundle.csv)
        .into_iter()
        .map(|served| {
            let certificate = ServingCertificate {
                ca_bundle: String::new(),
                ca_hash: String::new(),
            };
            (served.deployment, certificate)
        })
        .collect();
    let copy_list: Vec<String> = copies.iter().map(|(copy, _)| copy.clone()).collect();
    let extra_labels = BTreeMap::new();
    let context = RenderContext {
        csv: &owner,
        install_namespace: &args.namespace,
        targets: &targets,
        operator_group: &args.operator_group,
        subscription_config: None,
        pull_secret_names: &copy_list,
        extra_labels: &extra_labels,
        serving_certificates: &serving,
    };
    let rendered = render(&bundle, &context)?;
    let mut out = header(&bundle, &args, &targets, &copies, &rendered);
    out.push_str(&to_yaml(&rendered.operator_condition)?);
    for object in rendered.in_apply_order() {
        let mut object = object.clone();
        if object
            .types
            .as_ref()
            .is_some_and(|t| t.kind == SERVICE_ACCOUNT)
        {
            attach(&mut object, &copy_list);
        }
        out.push_str(&to_yaml(&object)?);
    }
    write_stdout(out.as_bytes())
}

/// The bundle in `dir`, laid out as its annotations say (`manifests/`, `metadata/` by default).
fn load(dir: &std::path::Path) -> Result<Bundle, BoxError> {
    let (manifests, metadata) = match BundleAnnotations::read(dir) {
        Ok(a) => (
            a.manifests_dir.trim_end_matches('/').to_owned(),
            a.metadata_dir.trim_end_matches('/').to_owned(),
        ),
        Err(_) => ("manifests".to_owned(), "metadata".to_owned()),
    };
    Ok(Bundle::load_layout(dir, &manifests, &metadata)?)
}

/// The Secret names of `--pull-secret`: a file's Secret name, or the argument itself.
fn secret_names(registry: &RegistryArgs) -> Result<Vec<String>, BoxError> {
    let mut names = Vec::new();
    for arg in &registry.pull_secrets {
        let name = if arg.is_file() {
            read_pull_secret_file(arg)?.name
        } else {
            arg.display().to_string()
        };
        if !is_dns1123_subdomain(&name) {
            return Err(format!(
                "--pull-secret {}: {name:?} is not a Secret name; give a Secret manifest file or \
                 the Secret's name",
                arg.display()
            )
            .into());
        }
        names.push(name);
    }
    Ok(names)
}

/// `(copy name, source namespace/name)` of each secret.
fn copy_names(
    catalog: Option<&str>,
    secrets: &[String],
) -> Result<Vec<(String, String)>, BoxError> {
    if secrets.is_empty() {
        return Ok(Vec::new());
    }
    let catalog = catalog.ok_or(
        "--pull-secret needs --catalog NAMESPACE/NAME: the name of each copy is derived from the \
         CatalogSource whose spec.secrets lists the Secret",
    )?;
    let (namespace, name) = catalog
        .split_once('/')
        .filter(|(ns, n)| !ns.is_empty() && !n.is_empty())
        .ok_or_else(|| format!("--catalog {catalog:?} must be NAMESPACE/NAME"))?;
    let mut copies: Vec<(String, String)> = secrets
        .iter()
        .map(|secret| {
            (
                copy_name(namespace, name, secret),
                format!("{namespace}/{secret}"),
            )
        })
        .collect();
    copies.sort();
    copies.dedup();
    Ok(copies)
}

/// The OperatorGroup's targets from the flags, or the CSV's preferred mode.
fn targets(args: &RenderArgs, bundle: &Bundle) -> Result<TargetNamespaces, BoxError> {
    let listed = || TargetNamespaces::namespaces(args.target_namespaces.iter().cloned());
    let spec = &bundle.csv.spec;
    let mode = match args.install_mode {
        Some(mode) => mode,
        None if !args.target_namespaces.is_empty() => return Ok(listed()?),
        None if spec.supports_install_mode(InstallModeType::AllNamespaces) => Mode::AllNamespaces,
        None => Mode::OwnNamespace,
    };
    let count = args.target_namespaces.len();
    Ok(match mode {
        Mode::AllNamespaces if count == 0 => TargetNamespaces::All,
        Mode::OwnNamespace if count == 0 => TargetNamespaces::namespaces([args.namespace.clone()])?,
        Mode::SingleNamespace if count == 1 => listed()?,
        Mode::MultiNamespace if count >= 1 => listed()?,
        Mode::AllNamespaces | Mode::OwnNamespace => {
            return Err(format!("--install-mode {mode:?} takes no --target-namespaces").into());
        }
        Mode::SingleNamespace => {
            return Err(
                "--install-mode SingleNamespace needs exactly one --target-namespaces".into(),
            );
        }
        Mode::MultiNamespace => {
            return Err("--install-mode MultiNamespace needs --target-namespaces".into());
        }
    })
}

/// The comment that opens the stream: what is installed where, and the copies by name.
fn header(
    bundle: &Bundle,
    args: &RenderArgs,
    targets: &TargetNamespaces,
    copies: &[(String, String)],
    rendered: &crate::bundle::RenderedBundle,
) -> String {
    let mut text = format!(
        "# {} into namespace {}, watching {targets}\n",
        bundle.name(),
        args.namespace
    );
    if copies.is_empty() {
        text.push_str("# no pull secrets (--pull-secret): no copies, nothing attached\n");
        return text;
    }
    text.push_str(&format!(
        "# pull-secret copies opcat creates in {} (data: the source's entries for the operator's images; not shown):\n",
        args.namespace
    ));
    for (copy, source) in copies {
        text.push_str(&format!("#   Secret {copy} (copy of {source})\n"));
    }
    let accounts: Vec<&str> = rendered
        .service_account_names
        .used
        .iter()
        .map(String::as_str)
        .collect();
    text.push_str(&format!(
        "# attached to ServiceAccounts (imagePullSecrets, kept beside existing entries): {}\n",
        accounts.join(", ")
    ));
    let deployments: Vec<&str> = rendered
        .deployments
        .iter()
        .filter_map(|d| d.metadata.name.as_deref())
        .collect();
    text.push_str(&format!(
        "# listed in the pod templates of Deployments: {}\n",
        deployments.join(", ")
    ));
    text
}

/// Adds the copies to a rendered ServiceAccount's `imagePullSecrets`, as the controller's
/// attach step leaves it.
fn attach(account: &mut DynamicObject, copies: &[String]) {
    if copies.is_empty() {
        return;
    }
    let entries: Vec<serde_json::Value> = copies
        .iter()
        .map(|name| serde_json::json!({ "name": name }))
        .collect();
    if let serde_json::Value::Object(fields) = &mut account.data {
        fields.insert("imagePullSecrets".to_owned(), entries.into());
    }
}

fn to_yaml<T: serde::Serialize>(object: &T) -> Result<String, BoxError> {
    Ok(format!("---\n{}", serde_saphyr::to_string(object)?))
}
