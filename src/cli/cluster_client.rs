//! The Kubernetes client of `opcat run`: which kubeconfig (or the in-cluster service account)
//! it uses, as kubectl chooses, and a first request that tells an unreachable server, refused
//! credentials and an unsupported Kubernetes version apart before anything starts.

use std::error::Error as StdError;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};

/// `User-Agent` of opcat's requests to the API server, so audit logs (and the scale benchmark)
/// can tell them from everyone else's.
pub const USER_AGENT: &str = concat!("opcat/", env!("CARGO_PKG_VERSION"));

/// The oldest Kubernetes minor version opcat runs on: server-side apply, which every write of
/// opcat uses, is GA from 1.22. Older servers are refused at start-up.
pub const MIN_KUBERNETES_MINOR: u32 = 22;

/// The oldest minor version opcat is built and tested against (k8s-openapi feature `v1_33`);
/// older servers down to [`MIN_KUBERNETES_MINOR`] start with a warning.
pub const TESTED_KUBERNETES_MINOR: u32 = 33;

/// Where the client's configuration comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// `--kubeconfig PATH`.
    Flag(PathBuf),
    /// The files of the `KUBECONFIG` environment variable, merged as kubectl merges them.
    Env(Vec<PathBuf>),
    /// `~/.kube/config`.
    Home(PathBuf),
    /// The pod's service account (`KUBERNETES_SERVICE_HOST`, the mounted token and CA).
    InCluster,
}

impl fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Flag(path) => write!(f, "kubeconfig {}", path.display()),
            Self::Env(paths) => {
                let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                write!(f, "kubeconfig {} (KUBECONFIG)", paths.join(":"))
            }
            Self::Home(path) => write!(f, "kubeconfig {}", path.display()),
            Self::InCluster => f.write_str("in-cluster service account"),
        }
    }
}

/// Why opcat has no working client.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "no Kubernetes configuration: KUBECONFIG is not set, {home} does not exist and opcat is \
         not in a pod (KUBERNETES_SERVICE_HOST is not set); pass --kubeconfig PATH"
    )]
    NoConfig { home: String },
    #[error("cannot read kubeconfig {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `reason` is kube's message, which already ends with its cause.
    #[error("{source_of} is not usable: {reason}")]
    Invalid {
        source_of: ConfigSource,
        reason: String,
    },
    #[error("context {context:?} is not in {source_of} (its contexts: {known})")]
    NoSuchContext {
        context: String,
        source_of: ConfigSource,
        known: String,
    },
    #[error(
        "--context {context} needs a kubeconfig, but there is none (KUBECONFIG is not set and \
         {home} does not exist); pass --kubeconfig PATH"
    )]
    ContextWithoutKubeconfig { context: String, home: String },
    #[error("cannot use the in-cluster service account")]
    InCluster(#[source] kube::config::InClusterError),
    #[error("cannot build a Kubernetes client from the {source_of}")]
    Build {
        source_of: ConfigSource,
        #[source]
        source: kube::Error,
    },
    #[error("cannot reach the Kubernetes API server at {url} ({source_of})")]
    Unreachable {
        url: String,
        source_of: ConfigSource,
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    #[error(
        "the Kubernetes API server at {url} refused opcat's request for its version ({source_of})"
    )]
    Refused {
        url: String,
        source_of: ConfigSource,
        #[source]
        source: kube::Error,
    },
    #[error(
        "the Kubernetes API server at {url} runs {version}; opcat needs Kubernetes \
         1.{MIN_KUBERNETES_MINOR} or newer (it is tested from 1.{TESTED_KUBERNETES_MINOR})"
    )]
    TooOld { url: String, version: String },
}

/// Chooses the configuration as kubectl does: `--kubeconfig`, else `KUBECONFIG`, else
/// `~/.kube/config`, else the in-cluster service account.
pub fn choose_source(
    flag: Option<&Path>,
    env: Option<OsString>,
    home: Option<PathBuf>,
    in_cluster: bool,
) -> Result<ConfigSource, ClientError> {
    if let Some(path) = flag {
        return Ok(ConfigSource::Flag(path.to_owned()));
    }
    if let Some(value) = env {
        let paths: Vec<PathBuf> = std::env::split_paths(&value)
            .filter(|path| !path.as_os_str().is_empty())
            .collect();
        if !paths.is_empty() {
            return Ok(ConfigSource::Env(paths));
        }
    }
    if let Some(path) = &home
        && path.exists()
    {
        return Ok(ConfigSource::Home(path.clone()));
    }
    if in_cluster {
        return Ok(ConfigSource::InCluster);
    }
    Err(ClientError::NoConfig {
        home: home_text(home.as_deref()),
    })
}

fn home_text(home: Option<&Path>) -> String {
    home.map_or_else(
        || "~/.kube/config".to_owned(),
        |path| path.display().to_string(),
    )
}

/// The source this process would use, from its flags and environment.
pub fn source_from_environment(
    flag: Option<&Path>,
    context: Option<&str>,
) -> Result<ConfigSource, ClientError> {
    let home = std::env::home_dir().map(|home| home.join(".kube").join("config"));
    let in_cluster = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    // A context names a kubeconfig entry: never fall back to the service account for it.
    let source = choose_source(
        flag,
        std::env::var_os("KUBECONFIG"),
        home.clone(),
        in_cluster && context.is_none(),
    );
    match (source, context) {
        (Err(ClientError::NoConfig { home }), Some(context)) => {
            Err(ClientError::ContextWithoutKubeconfig {
                context: context.to_owned(),
                home,
            })
        }
        (source, _) => source,
    }
}

/// Reads the kubeconfig files of `source` (merged in order).
fn read_kubeconfig(source: &ConfigSource) -> Result<Kubeconfig, ClientError> {
    let paths: Vec<&Path> = match source {
        ConfigSource::Flag(path) | ConfigSource::Home(path) => vec![path],
        ConfigSource::Env(paths) => paths.iter().map(PathBuf::as_path).collect(),
        ConfigSource::InCluster => return Ok(Kubeconfig::default()),
    };
    let mut merged = Kubeconfig::default();
    for path in paths {
        let next = Kubeconfig::read_from(path).map_err(|error| match error {
            KubeconfigError::ReadConfig(source, _) => ClientError::Read {
                path: path.to_owned(),
                source,
            },
            other => invalid(source, &other),
        })?;
        merged = merged
            .merge(next)
            .map_err(|error| invalid(source, &error))?;
    }
    Ok(merged)
}

fn invalid(source: &ConfigSource, error: &KubeconfigError) -> ClientError {
    ClientError::Invalid {
        source_of: source.clone(),
        reason: error.to_string(),
    }
}

/// The client configuration of `source`, with `context` if given.
pub async fn config(
    source: &ConfigSource,
    context: Option<&str>,
) -> Result<kube::Config, ClientError> {
    let mut config = if *source == ConfigSource::InCluster {
        kube::Config::incluster().map_err(ClientError::InCluster)?
    } else {
        let kubeconfig = read_kubeconfig(source)?;
        if let Some(context) = context
            && !kubeconfig
                .contexts
                .iter()
                .any(|named| named.name == context)
        {
            let known: Vec<&str> = kubeconfig
                .contexts
                .iter()
                .map(|named| named.name.as_str())
                .collect();
            return Err(ClientError::NoSuchContext {
                context: context.to_owned(),
                source_of: source.clone(),
                known: if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                },
            });
        }
        let options = KubeConfigOptions {
            context: context.map(str::to_owned),
            ..KubeConfigOptions::default()
        };
        kube::Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .map_err(|error| invalid(source, &error))?
    };
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
    Ok(config)
}

/// Builds the client and asks the server for its version: the first request opcat makes, so
/// an unreachable server, refused credentials or a too old Kubernetes stop opcat with a
/// message naming the server.
pub async fn connect(
    config: kube::Config,
    source: ConfigSource,
) -> Result<kube::Client, ClientError> {
    let url = config.cluster_url.to_string();
    let url = url.strip_suffix('/').unwrap_or(&url).to_owned();
    let client = kube::Client::try_from(config).map_err(|error| ClientError::Build {
        source_of: source.clone(),
        source: error,
    })?;
    let info = match client.apiserver_version().await {
        Ok(info) => info,
        Err(kube::Error::Api(status)) => {
            return Err(ClientError::Refused {
                url,
                source_of: source,
                source: kube::Error::Api(status),
            });
        }
        Err(kube::Error::Service(error)) => {
            return Err(ClientError::Unreachable {
                url,
                source_of: source,
                source: error,
            });
        }
        Err(error) => {
            return Err(ClientError::Unreachable {
                url,
                source_of: source,
                source: Box::new(error),
            });
        }
    };
    let version = info.git_version.clone();
    match minor_version(&info.major, &info.minor) {
        Some(minor) if minor < MIN_KUBERNETES_MINOR => {
            return Err(ClientError::TooOld { url, version });
        }
        Some(minor) if minor < TESTED_KUBERNETES_MINOR => tracing::warn!(
            server = %url,
            %version,
            "Kubernetes older than 1.{TESTED_KUBERNETES_MINOR}: opcat is not tested on it"
        ),
        Some(_) => {}
        None => tracing::warn!(
            server = %url,
            major = %info.major,
            minor = %info.minor,
            "cannot tell the Kubernetes version; continuing"
        ),
    }
    tracing::info!(server = %url, %version, config = %source, "connected to the Kubernetes API server");
    Ok(client)
}

/// The minor version of a Kubernetes 1.x server (`minor` may carry a suffix, e.g. `28+` on
/// managed clusters); `None` when it is not 1.x or unreadable.
pub fn minor_version(major: &str, minor: &str) -> Option<u32> {
    if major.trim() != "1" {
        return None;
    }
    let digits: String = minor.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_is_chosen_as_kubectl_chooses() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("config");
        let flag = Path::new("/flag/kubeconfig");
        assert_eq!(
            choose_source(Some(flag), Some("/env".into()), Some(home.clone()), true).ok(),
            Some(ConfigSource::Flag(flag.to_owned()))
        );
        assert_eq!(
            choose_source(None, Some("/a::/b".into()), Some(home.clone()), true).ok(),
            Some(ConfigSource::Env(vec!["/a".into(), "/b".into()]))
        );
        // An empty KUBECONFIG is unset; a missing ~/.kube/config falls to the service account.
        assert_eq!(
            choose_source(None, Some("".into()), Some(home.clone()), true).ok(),
            Some(ConfigSource::InCluster)
        );
        std::fs::write(&home, "").expect("write");
        assert_eq!(
            choose_source(None, None, Some(home.clone()), true).ok(),
            Some(ConfigSource::Home(home.clone()))
        );
        let missing = dir.path().join("missing");
        let error = choose_source(None, None, Some(missing.clone()), false).expect_err("none");
        let text = error.to_string();
        assert!(text.contains(&missing.display().to_string()), "{text}");
        assert!(text.contains("--kubeconfig"), "{text}");
    }

    #[test]
    fn versions_of_managed_clusters_are_read() {
        assert_eq!(minor_version("1", "33"), Some(33));
        assert_eq!(minor_version("1", "28+"), Some(28));
        assert_eq!(minor_version("2", "0"), None);
        assert_eq!(minor_version("1", ""), None);
    }
}
