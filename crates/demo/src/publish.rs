//! Publishing the example content to a registry with the real CLI: `opcat bundle push` for
//! every bundle under `bundles/` and `opcat catalog push` for `catalog/`, after rewriting the
//! placeholder registry `localhost:5000` to the real one (as the tests do).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::examples::EXAMPLE_REGISTRY;

/// Why the examples could not be published.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("cannot copy {from} to {to}")]
    Copy {
        from: PathBuf,
        to: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot run {binary}")]
    Run {
        binary: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`opcat {command}` failed for {image}: {stderr}")]
    Push {
        command: String,
        image: String,
        stderr: String,
    },
    #[error("`opcat {command}` did not report a digest for {image}: {stdout}")]
    NoDigest {
        command: String,
        image: String,
        stdout: String,
    },
}

/// What `opcat ... push` needs to reach the registry.
#[derive(Debug, Clone)]
pub struct PushConfig {
    /// The `opcat` binary.
    pub opcat: PathBuf,
    /// `HOST:PORT` of the registry.
    pub registry_host: String,
    /// `--pull-secret`: a Secret manifest with credentials that may push.
    pub pull_secret: PathBuf,
    /// `--ca-file`: the registry's CA.
    pub ca_file: PathBuf,
}

/// One pushed image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// What it is (`bundle widget-operator 1.2.0`).
    pub what: String,
    /// The reference pushed to.
    pub image: String,
    /// Its digest.
    pub digest: String,
}

/// Every bundle under `repo/bundles/<package>/<version>/` (as the bundle image and as a stand-in
/// for the operator image its Deployments run), then the catalog `repo/catalog/`, rewritten into
/// `work` and pushed under `opcat-examples/` as `bundles/README.md` describes.
pub fn push_examples(
    config: &PushConfig,
    repo: &Path,
    work: &Path,
) -> Result<Vec<Pushed>, PublishError> {
    let bundles = work.join("bundles");
    let catalog = work.join("catalog");
    copy_rewritten(&repo.join("bundles"), &bundles, &config.registry_host)?;
    copy_rewritten(&repo.join("catalog"), &catalog, &config.registry_host)?;
    let mut pushed = Vec::new();
    for (package, version, dir) in bundle_dirs(&bundles)? {
        let bundle = format!("opcat-examples/{package}-bundle:v{version}");
        pushed.push(push(
            config,
            "bundle push",
            &dir,
            &bundle,
            format!("bundle   {package} {version}"),
        )?);
        // Nothing runs the operator here, but opcat checks that every image of the bundle
        // resolves with the propagated credentials: any image will do.
        let operator = format!("opcat-examples/{package}:v{version}");
        pushed.push(push(
            config,
            "bundle push",
            &dir,
            &operator,
            format!("operator {package} {version} (stand-in image)"),
        )?);
    }
    pushed.push(push(
        config,
        "catalog push",
        &catalog,
        "opcat-examples/catalog:latest",
        "catalog  widget-operator, gadget-operator".to_owned(),
    )?);
    Ok(pushed)
}

/// `opcat <command> DIR HOST/<repository_and_tag>`; the digest it reports.
fn push(
    config: &PushConfig,
    command: &str,
    dir: &Path,
    repository_and_tag: &str,
    what: String,
) -> Result<Pushed, PublishError> {
    let image = format!("{}/{repository_and_tag}", config.registry_host);
    let output = Command::new(&config.opcat)
        .args(command.split(' '))
        .arg(dir)
        .arg(&image)
        .arg("--pull-secret")
        .arg(&config.pull_secret)
        .arg("--ca-file")
        .arg(&config.ca_file)
        .env_remove("OPCAT_CACHE_DIR")
        .output()
        .map_err(|source| PublishError::Run {
            binary: config.opcat.clone(),
            source,
        })?;
    if !output.status.success() {
        return Err(PublishError::Push {
            command: command.to_owned(),
            image,
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    match pushed_digest(&stdout) {
        Some(digest) => Ok(Pushed {
            what,
            image,
            digest: digest.to_owned(),
        }),
        None => Err(PublishError::NoDigest {
            command: command.to_owned(),
            image,
            stdout: stdout.trim().to_owned(),
        }),
    }
}

/// The digest in `pushed IMAGE (sha256:...)`.
fn pushed_digest(stdout: &str) -> Option<&str> {
    let line = stdout.lines().find(|l| l.starts_with("pushed "))?;
    let start = line.rfind('(')? + 1;
    let end = line.rfind(')')?;
    line.get(start..end).filter(|d| d.starts_with("sha256:"))
}

/// `(package, version, dir)` of every `bundles/<package>/<version>/`, sorted.
fn bundle_dirs(bundles: &Path) -> Result<Vec<(String, String, PathBuf)>, PublishError> {
    let mut found = Vec::new();
    for package in sorted_dirs(bundles)? {
        for version in sorted_dirs(&package)? {
            found.push((file_name(&package), file_name(&version), version));
        }
    }
    Ok(found)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>, PublishError> {
    let read_error = |source| PublishError::Copy {
        from: dir.to_owned(),
        to: dir.to_owned(),
        source,
    };
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_error)? {
        let path = entry.map_err(read_error)?.path();
        if path.is_dir() {
            dirs.push(path);
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// Copies the tree `from` to `to`, replacing [`EXAMPLE_REGISTRY`] with `host` in every file.
pub fn copy_rewritten(from: &Path, to: &Path, host: &str) -> Result<(), PublishError> {
    let failed = |source| PublishError::Copy {
        from: from.to_owned(),
        to: to.to_owned(),
        source,
    };
    std::fs::create_dir_all(to).map_err(failed)?;
    for entry in std::fs::read_dir(from).map_err(failed)? {
        let entry = entry.map_err(failed)?;
        let target = to.join(entry.file_name());
        if entry.file_type().map_err(failed)?.is_dir() {
            copy_rewritten(&entry.path(), &target, host)?;
        } else {
            let text = std::fs::read_to_string(entry.path()).map_err(failed)?;
            std::fs::write(&target, text.replace(EXAMPLE_REGISTRY, host)).map_err(failed)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_comes_from_the_push_line() {
        assert_eq!(
            pushed_digest("pushed 127.0.0.1:5000/a/b:v1 (sha256:abc)\n"),
            Some("sha256:abc")
        );
        assert_eq!(pushed_digest("something else\n"), None);
    }

    #[test]
    fn every_example_bundle_is_found_and_rewritten() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let work = tempfile::tempdir().unwrap();
        copy_rewritten(&repo.join("bundles"), work.path(), "127.0.0.1:5999").unwrap();
        let found: Vec<String> = bundle_dirs(work.path())
            .unwrap()
            .into_iter()
            .map(|(package, version, _)| format!("{package} {version}"))
            .collect();
        assert_eq!(
            found,
            [
                "gadget-operator 0.1.0",
                "gadget-operator 0.2.0",
                "widget-operator 1.0.0",
                "widget-operator 1.1.0",
                "widget-operator 1.1.1",
                "widget-operator 1.2.0",
                "widget-operator 2.0.0",
            ]
        );
        let csv = std::fs::read_to_string(
            work.path()
                .join("widget-operator/1.2.0/manifests/widget-operator.clusterserviceversion.yaml"),
        )
        .unwrap();
        assert!(csv.contains("127.0.0.1:5999/opcat-examples/widget-operator:v1.2.0"));
        assert!(!csv.contains(EXAMPLE_REGISTRY));
    }
}
