//! Registry flags shared by every command that pulls or pushes images, and the glue from them
//! to the library: `--pull-secret`, `--ca-file`, `--plain-http`, `--cache-dir`.

use std::path::{Path, PathBuf};

use crate::registry::credentials::Credential;
use crate::registry::push::BuiltImage;
use crate::registry::secret_file::read_pull_secret_file;
use crate::registry::source::{LocalCatalog, Source, local_catalog};
use crate::registry::{ImageRef, Keyring, Registry, RegistryOptions, SecretError};

/// Credentials, trust and cache for commands that talk to registries.
#[derive(Debug, Clone, clap::Args)]
pub struct RegistryArgs {
    /// Pull secret to authenticate with: a Kubernetes Secret manifest (YAML or JSON) of type
    /// kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg, or a raw dockerconfig JSON
    /// file. Repeatable; matched per registry like the kubelet does. Without it, your own
    /// docker config (~/.docker/config.json or $DOCKER_CONFIG) is used.
    #[arg(long = "pull-secret", value_name = "FILE")]
    pub pull_secrets: Vec<PathBuf>,

    /// PEM file of CA certificates to trust in addition to the system roots (repeatable).
    #[arg(long = "ca-file", value_name = "PEM")]
    pub ca_files: Vec<PathBuf>,

    /// Talk plain HTTP to this registry (HOST:PORT). Only loopback registries are allowed.
    #[arg(long = "plain-http", value_name = "HOST:PORT")]
    pub plain_http: Vec<String>,

    /// Where pulled images are unpacked and cached, keyed by digest (default
    /// ~/.cache/opcat). `bundle unpack` only caches when this is given; otherwise it pulls
    /// straight into its target.
    #[arg(long = "cache-dir", value_name = "DIR", env = "OPCAT_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl RegistryArgs {
    /// A registry client from the flags.
    pub fn registry(&self) -> Result<Registry, BoxError> {
        self.registry_with_cache(&self.cache_dir())
    }

    /// A registry client from the flags, caching in `cache_dir` whatever `--cache-dir` says.
    pub fn registry_with_cache(&self, cache_dir: &Path) -> Result<Registry, BoxError> {
        crate::registry::install_crypto_provider();
        let mut options = RegistryOptions::new(cache_dir);
        for file in &self.ca_files {
            let pem = std::fs::read(file)
                .map_err(|e| format!("cannot read --ca-file {}: {e}", file.display()))?;
            crate::registry::client::check_ca_bundle(&pem)
                .map_err(|e| format!("--ca-file {} {e}", file.display()))?;
            options.trust.extra_root_certs_pem.push(pem);
        }
        // The tooling commands talk plain HTTP to loopback registries only (a local test
        // registry); the controller's --insecure-registry may name any registry.
        if let Some(host) = self
            .plain_http
            .iter()
            .find(|host| !crate::registry::reference::is_loopback_host(host))
        {
            return Err(format!(
                "--plain-http is only allowed for loopback registries, not {host:?}"
            )
            .into());
        }
        options.trust.insecure_hosts = self.plain_http.iter().cloned().collect();
        Ok(Registry::new(options)?)
    }

    fn cache_dir(&self) -> PathBuf {
        if let Some(dir) = &self.cache_dir {
            return dir.clone();
        }
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        base.join("opcat")
    }

    /// The credentials for `image`: the `--pull-secret` files, or the user's docker config.
    pub fn keyring(&self, image: &ImageRef) -> Result<Keyring, BoxError> {
        if self.pull_secrets.is_empty() {
            return Ok(docker_config_keyring(image));
        }
        let mut secrets = Vec::new();
        for file in &self.pull_secrets {
            secrets.push(read_pull_secret_file(file)?);
        }
        let (keyring, errors) = Keyring::from_secrets(&secrets);
        for error in errors {
            match error {
                // The secret's other entries still count.
                SecretError::UnusableEntry { .. } => eprintln!("warning: {error}"),
                other => return Err(other.into()),
            }
        }
        Ok(keyring)
    }

    /// Pushes a built image to `image` and prints `pushed IMAGE (DIGEST)`.
    pub async fn push(&self, image: &str, built: &BuiltImage) -> Result<(), BoxError> {
        let image: ImageRef = image.parse()?;
        let keyring = self.keyring(&image)?;
        let digest = self.registry()?.push(&image, built, &keyring).await?;
        println!("pushed {image} ({digest})");
        Ok(())
    }

    /// `SOURCE` → catalog on disk: an existing path as is, otherwise the pulled image's
    /// catalog directory (label `operators.operatorframework.io.index.configs.v1`, default
    /// `/configs`).
    pub async fn local_catalog(&self, source: &str) -> Result<LocalCatalog, BoxError> {
        let source = Source::parse(source)?;
        let keyring = match &source {
            Source::Image(image) => self.keyring(image)?,
            Source::Path(_) => Keyring::empty(),
        };
        let registry = match &source {
            Source::Image(_) => self.registry()?,
            Source::Path(path) => {
                return Ok(LocalCatalog {
                    path: path.clone(),
                    image: None,
                });
            }
        };
        Ok(local_catalog(&source, &registry, &keyring).await?)
    }
}

/// The CLI user's own docker config, through `docker_credential` (which may run credential
/// helpers): only ever for the person running opcat, never for cluster secrets.
fn docker_config_keyring(image: &ImageRef) -> Keyring {
    let host = image.registry();
    let server = if host == "docker.io" {
        "https://index.docker.io/v1/"
    } else {
        host
    };
    let mut keyring = Keyring::empty();
    match docker_credential::get_credential(server) {
        Ok(docker_credential::DockerCredential::UsernamePassword(username, password)) => {
            keyring.add("docker config", host, Credential::new(username, password));
        }
        Ok(docker_credential::DockerCredential::IdentityToken(_)) => eprintln!(
            "warning: your docker config has only an identity token for {host}; identity tokens \
             are not usable as pull credentials, trying anonymously"
        ),
        // No config, or nothing for this host: anonymous.
        Err(_) => {}
    }
    keyring
}
