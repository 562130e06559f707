//! The flags of `opcat run` and the checks of their values (clap value parsers): everything
//! that is refused before the controller starts.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::controller::leader::DEFAULT_LEASE_NAME;
use crate::telemetry::LogFormat;

/// `opcat run --help`.
pub const LONG_ABOUT: &str = "\
Run the controller manager against a cluster. The cluster is chosen as kubectl chooses it: \
--kubeconfig, else the files of the KUBECONFIG environment variable, else ~/.kube/config, else \
the in-cluster service account (the default in a pod); --context picks a kubeconfig context \
other than its current-context. opcat asks the API server for its version first and stops \
with the server's URL if it cannot reach it, or if Kubernetes is older than 1.22.

opcat refuses to start while OLM's own controllers (Deployments labelled app=olm-operator or \
app=catalog-operator) run in the cluster: both would act on the same operators.coreos.com \
objects. Scale OLM down first (docs/operating.md), or pass --allow-olm-coexistence.

opcat serves OLM v0's CatalogSource, Subscription, InstallPlan, ClusterServiceVersion and \
OperatorGroup, installs operators from private catalogs, and gives their workloads the catalog's \
pull secrets. Its CRDs must be installed first (kubectl apply --server-side -k deploy/crds).

Every flag can also be set through the environment variable shown with it. Logs go to stderr; \
RUST_LOG filters them (default info, e.g. RUST_LOG=opcat=debug,kube=info). SIGTERM stops \
gracefully: readiness turns off, no new reconciles start, in-flight ones get --shutdown-timeout, \
the leader lease is released, exit code 0. Invalid flag values are refused before anything starts.";

/// The flags of `opcat run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The kubeconfig file to use (default: KUBECONFIG, else ~/.kube/config, else the
    /// in-cluster service account).
    #[arg(long, value_name = "PATH", help_heading = "Cluster")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (default: its current-context).
    #[arg(long, value_name = "NAME", help_heading = "Cluster")]
    pub context: Option<String>,

    /// Start even though OLM's own controllers run in the cluster. Both then reconcile the
    /// same Subscriptions, InstallPlans and CSVs: each overwrites the other's status and
    /// installs, and an upgrade may be applied twice. Only for a short, supervised migration.
    #[arg(
        long,
        env = "OPCAT_ALLOW_OLM_COEXISTENCE",
        value_parser = clap::builder::BoolishValueParser::new(),
        help_heading = "Cluster"
    )]
    pub allow_olm_coexistence: bool,

    /// Watch and manage only this namespace (default: all namespaces).
    #[arg(long, env = "OPCAT_NAMESPACE", value_name = "NAMESPACE", value_parser = dns_label)]
    pub namespace: Option<String>,

    /// Directory for unpacked catalog and bundle images, keyed by digest; survives restarts so
    /// an unchanged image is not pulled again. Must be writable.
    #[arg(
        long,
        env = "OPCAT_CACHE_DIR",
        value_name = "DIR",
        default_value = "/var/cache/opcat"
    )]
    pub cache_dir: PathBuf,

    /// Namespace whose CatalogSources every namespace sees: Subscriptions may name catalogs
    /// there, and operator dependencies are resolved from them (besides the Subscription's own
    /// namespace). OLM's default is olm; OpenShift uses openshift-marketplace.
    #[arg(
        long,
        env = "OPCAT_GLOBAL_CATALOG_NAMESPACE",
        value_name = "NAMESPACE",
        default_value = crate::controller::context::DEFAULT_GLOBAL_CATALOG_NAMESPACE,
        value_parser = dns_label
    )]
    pub global_catalog_namespace: String,

    /// Poll interval for CatalogSources without `spec.updateStrategy.registryPoll` (a Go
    /// duration such as 30m). Default: such catalogs are not polled, as in OLM.
    #[arg(
        long,
        env = "OPCAT_POLL_DEFAULT",
        value_name = "DURATION",
        value_parser = positive_duration
    )]
    pub poll_default: Option<Duration>,

    /// How often the registry server of a `spec.address` CatalogSource is health-checked, and
    /// how long opcat waits before trying a server that failed again (a Go duration).
    #[arg(
        long,
        env = "OPCAT_CATALOG_SERVER_CHECK",
        value_name = "DURATION",
        default_value = "10s",
        value_parser = positive_duration
    )]
    pub catalog_server_check: Duration,

    /// Maximum parallel reconciles per controller (1-256).
    #[arg(long, env = "OPCAT_CONCURRENCY", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,

    /// How often a converged object is reconciled again without any event (a Go duration).
    /// Each resync reads from the watch caches and writes nothing unless something drifted.
    #[arg(
        long,
        env = "OPCAT_RESYNC",
        value_name = "DURATION",
        default_value = "10m",
        value_parser = positive_duration
    )]
    pub resync: Duration,

    /// How long a bundle image tag that a catalog's credentials resolved is reused by other
    /// InstallPlans pulling it with the same credentials, without asking the registry again
    /// (a Go duration). A burst of installs then costs one manifest request instead of one per
    /// namespace; a tag moved in the registry reaches new plans within this time. 0s asks at
    /// every plan; bundles pinned by digest are never asked about once cached.
    #[arg(
        long,
        env = "OPCAT_BUNDLE_TAG_TTL",
        value_name = "DURATION",
        default_value = "1m",
        value_parser = duration,
        help_heading = "Registries"
    )]
    pub bundle_tag_ttl: Duration,

    /// Log format.
    #[arg(long, env = "OPCAT_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// How long in-flight reconciles may take after SIGTERM before they are abandoned. Keep it
    /// below the pod's terminationGracePeriodSeconds.
    #[arg(
        long,
        env = "OPCAT_SHUTDOWN_TIMEOUT",
        value_name = "DURATION",
        default_value = "20s",
        value_parser = positive_duration
    )]
    pub shutdown_timeout: Duration,

    /// Extra root CA (PEM) for registries with an internal CA. Repeatable; the environment
    /// variable takes a comma-separated list.
    #[arg(
        long = "ca-file",
        env = "OPCAT_CA_FILES",
        value_delimiter = ',',
        value_name = "PEM",
        help_heading = "Registries"
    )]
    pub ca_files: Vec<PathBuf>,

    /// Talk plain HTTP (no TLS) to this registry, `host[:port]`, e.g. an internal registry
    /// without certificates. Only the registries named here; credentials sent to them travel
    /// unencrypted. Repeatable; the environment variable takes a comma-separated list.
    #[arg(
        long = "insecure-registry",
        env = "OPCAT_INSECURE_REGISTRIES",
        value_delimiter = ',',
        value_name = "HOST[:PORT]",
        help_heading = "Registries"
    )]
    pub insecure_registries: Vec<String>,

    /// Address of the admin HTTP server (/livez, /readyz, /metrics). Use 0.0.0.0:8080 in a
    /// pod so the kubelet and Prometheus can reach it.
    #[arg(
        long,
        env = "OPCAT_ADMIN_ADDRESS",
        value_name = "IP:PORT",
        default_value = "127.0.0.1:8080",
        help_heading = "Admin server"
    )]
    pub admin_address: SocketAddr,

    /// Address of the package API (the aggregated `packages.operators.coreos.com` API server
    /// that answers `kubectl get packagemanifests`; HTTPS with a certificate opcat issues).
    /// The package API Service's targetPort points here.
    #[arg(
        long,
        env = "OPCAT_PACKAGE_API_ADDRESS",
        value_name = "IP:PORT",
        default_value = "0.0.0.0:5443",
        help_heading = "Package API"
    )]
    pub package_api_address: SocketAddr,

    /// Do not serve the package API (without it, `kubectl get packagemanifests` and the tools
    /// built on it do not work). It is also off outside a pod unless --package-api-namespace
    /// is given.
    #[arg(
        long,
        env = "OPCAT_DISABLE_PACKAGE_API",
        value_parser = clap::builder::BoolishValueParser::new(),
        help_heading = "Package API"
    )]
    pub disable_package_api: bool,

    /// opcat's own namespace, where the package API's Service, certificate Secret and pods
    /// are. Default: the POD_NAMESPACE environment variable, else the namespace of the pod's
    /// service account.
    #[arg(
        long,
        env = "OPCAT_PACKAGE_API_NAMESPACE",
        value_name = "NAMESPACE",
        value_parser = dns_label,
        help_heading = "Package API"
    )]
    pub package_api_namespace: Option<String>,

    /// Name of the Service the APIService v1.packages.operators.coreos.com points at (the
    /// serving certificate is issued for <service>.<namespace>.svc).
    #[arg(
        long,
        env = "OPCAT_PACKAGE_API_SERVICE",
        value_name = "NAME",
        default_value = crate::controller::package_api::DEFAULT_SERVICE,
        value_parser = dns_label,
        help_heading = "Package API"
    )]
    pub package_api_service: String,

    /// Name of the Secret (in opcat's namespace) holding the package API's serving certificate
    /// and its CA, which opcat issues and rotates.
    #[arg(
        long,
        env = "OPCAT_PACKAGE_API_SECRET",
        value_name = "NAME",
        default_value = crate::controller::package_api::DEFAULT_SECRET,
        value_parser = dns_subdomain,
        help_heading = "Package API"
    )]
    pub package_api_secret: String,

    /// Reconcile only while holding the leader Lease, so that several replicas can run for
    /// availability. Identity: the POD_NAME environment variable (else host name and process
    /// id).
    #[arg(
        long,
        env = "OPCAT_LEADER_ELECT",
        value_parser = clap::builder::BoolishValueParser::new(),
        help_heading = "Leader election"
    )]
    pub leader_elect: bool,

    /// How long the Lease is valid after a renewal; a standby takes over this long after the
    /// leader's last renewal. Whole seconds.
    #[arg(
        long,
        env = "OPCAT_LEADER_ELECT_LEASE_DURATION",
        value_name = "DURATION",
        default_value = "15s",
        value_parser = positive_duration,
        help_heading = "Leader election"
    )]
    pub leader_elect_lease_duration: Duration,

    /// The leader stops reconciling when it has not renewed the Lease for this long; it renews
    /// every half of it. Shorter than the lease duration; whole seconds, at least 2s.
    #[arg(
        long,
        env = "OPCAT_LEADER_ELECT_RENEW_DEADLINE",
        value_name = "DURATION",
        default_value = "10s",
        value_parser = positive_duration,
        help_heading = "Leader election"
    )]
    pub leader_elect_renew_deadline: Duration,

    /// Name of the Lease.
    #[arg(
        long,
        env = "OPCAT_LEADER_ELECT_RESOURCE_NAME",
        value_name = "NAME",
        default_value = DEFAULT_LEASE_NAME,
        value_parser = dns_subdomain,
        help_heading = "Leader election"
    )]
    pub leader_elect_resource_name: String,

    /// Namespace of the Lease. Default: the POD_NAMESPACE environment variable, else the
    /// namespace of the pod's service account.
    #[arg(
        long,
        env = "OPCAT_LEADER_ELECT_RESOURCE_NAMESPACE",
        value_name = "NAMESPACE",
        value_parser = dns_label,
        help_heading = "Leader election"
    )]
    pub leader_elect_resource_namespace: Option<String>,
}

/// A Go duration, zero included (`0s`, `30s`, `1h30m`).
fn duration(text: &str) -> Result<Duration, String> {
    crate::go_duration::parse(text).map_err(|error| error.to_string())
}

/// A Go duration greater than zero (`30s`, `15m`, `1h30m`).
fn positive_duration(text: &str) -> Result<Duration, String> {
    let duration = duration(text)?;
    if duration.is_zero() {
        return Err(format!("must be greater than zero, got {text:?}"));
    }
    Ok(duration)
}

/// An RFC 1123 label (namespace names).
fn dns_label(text: &str) -> Result<String, String> {
    let valid = !text.is_empty()
        && text.len() <= 63
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-');
    if valid {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "{text:?} is not a valid namespace name (lower-case letters, digits and '-', at most \
             63, starting and ending with a letter or digit)"
        ))
    }
}

/// An RFC 1123 subdomain (object names).
fn dns_subdomain(text: &str) -> Result<String, String> {
    let valid = !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|label| dns_label(label).is_ok());
    if valid {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "{text:?} is not a valid object name (lower-case letters, digits, '-' and '.', at \
             most 253)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_must_be_positive_go_durations() {
        assert_eq!(positive_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert!(
            positive_duration("0")
                .unwrap_err()
                .contains("greater than zero")
        );
        assert!(
            positive_duration("10")
                .unwrap_err()
                .contains("missing unit")
        );
        assert!(positive_duration("-5s").unwrap_err().contains("negative"));
    }

    #[test]
    fn a_zero_duration_is_taken_where_zero_means_off() {
        assert_eq!(duration("0s"), Ok(Duration::ZERO));
        assert_eq!(duration("0"), Ok(Duration::ZERO));
        assert_eq!(duration("1m"), Ok(Duration::from_secs(60)));
        assert!(duration("-1s").unwrap_err().contains("negative"));
    }

    #[test]
    fn names_are_checked_like_the_api_server_does() {
        assert!(dns_label("opcat-system").is_ok());
        assert!(dns_label("Opcat").is_err());
        assert!(dns_label("-x").is_err());
        assert!(dns_label(&"a".repeat(64)).is_err());
        assert!(dns_subdomain("opcat-leader").is_ok());
        assert!(dns_subdomain("opcat.leader").is_ok());
        assert!(dns_subdomain("opcat..leader").is_err());
    }
}
