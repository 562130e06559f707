//! `opcat bundle unpack|push` and `opcat catalog push` against the real registry, through the
//! binary, with the credential flags.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod registry_support;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use opcat::cli::registry_args::RegistryArgs;
use registry_support::*;
use test_registry::{Distribution, dockerconfigjson, pull_secret_yaml};

fn opcat(args: &[&str], home: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_opcat"))
        .args(args)
        .env("HOME", home)
        .env_remove("DOCKER_CONFIG")
        .env_remove("OPCAT_CACHE_DIR")
        .output()
        .unwrap()
}

fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "opcat failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

struct Env {
    dist: Distribution,
    work: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let dist = Distribution::basic("cli-user", "cli-pass");
        let work = tempfile::tempdir().unwrap();
        fs::write(
            work.path().join("secret.yaml"),
            pull_secret_yaml("registry-creds", &dist.dockerconfigjson()),
        )
        .unwrap();
        Env { dist, work }
    }

    fn path(&self, name: &str) -> String {
        self.work.path().join(name).display().to_string()
    }

    /// Flags for the test registry, with the given secret file.
    fn flags(&self, secret: &str) -> Vec<String> {
        vec![
            "--pull-secret".into(),
            self.path(secret),
            "--ca-file".into(),
            self.dist.ca.pem_path().display().to_string(),
            "--cache-dir".into(),
            self.path("cache"),
        ]
    }

    fn run(&self, args: &[&str], secret: &str) -> Output {
        let mut all: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        all.extend(self.flags(secret));
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        opcat(&refs, self.work.path())
    }
}

#[test]
fn bundle_push_then_unpack() {
    let env = Env::new();
    let bundle = env.work.path().join("bundle");
    write_bundle(&bundle);
    let image = env.dist.image("bundles/widgets:v1.0.0");
    let stdout = ok(&env.run(
        &["bundle", "push", &env.path("bundle"), &image],
        "secret.yaml",
    ));
    assert!(
        stdout.starts_with(&format!("pushed {image} (sha256:")),
        "{stdout}"
    );

    let stdout = ok(&env.run(
        &["bundle", "unpack", &image, &env.path("out")],
        "secret.yaml",
    ));
    assert!(
        stdout.starts_with(&format!("unpacked {image} (sha256:")),
        "{stdout}"
    );
    assert_eq!(tree(&env.work.path().join("out")), tree(&bundle));

    // A non-empty target is refused and left alone.
    let output = env.run(
        &["bundle", "unpack", &image, &env.path("out")],
        "secret.yaml",
    );
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("exists and is not empty"));
}

#[test]
fn bundle_unpack_without_cache_dir_leaves_only_the_target() {
    let env = Env::new();
    write_bundle(&env.work.path().join("bundle"));
    let image = env.dist.image("bundles/widgets:v2");
    ok(&env.run(
        &["bundle", "push", &env.path("bundle"), &image],
        "secret.yaml",
    ));
    let parent = env.work.path().join("unpacked");
    fs::create_dir(&parent).unwrap();
    let target = parent.join("widgets");
    ok(&opcat(
        &[
            "bundle",
            "unpack",
            &image,
            &target.display().to_string(),
            "--pull-secret",
            &env.path("secret.yaml"),
            "--ca-file",
            &env.dist.ca.pem_path().display().to_string(),
        ],
        env.work.path(),
    ));
    assert_eq!(tree(&target), tree(&env.work.path().join("bundle")));
    let left: Vec<_> = fs::read_dir(&parent)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["widgets"]);
    assert!(
        !env.work.path().join(".cache").exists(),
        "no cache without --cache-dir"
    );
}

#[test]
fn catalog_push_twice_gives_one_digest() {
    let env = Env::new();
    write_catalog(&env.work.path().join("catalog"));
    let first = ok(&env.run(
        &[
            "catalog",
            "push",
            &env.path("catalog"),
            &env.dist.image("catalogs/c:a"),
        ],
        "secret.yaml",
    ));
    let second = ok(&env.run(
        &[
            "catalog",
            "push",
            &env.path("catalog"),
            &env.dist.image("catalogs/c:b"),
        ],
        "secret.yaml",
    ));
    let digest = |s: &str| {
        s.split('(')
            .nth(1)
            .unwrap()
            .trim()
            .trim_end_matches(')')
            .to_owned()
    };
    assert_eq!(digest(&first), digest(&second));
}

#[test]
fn wrong_credentials_fail_without_leaking_or_leaving_a_directory() {
    let env = Env::new();
    write_bundle(&env.work.path().join("bundle"));
    let image = env.dist.image("bundles/widgets:v1");
    ok(&env.run(
        &["bundle", "push", &env.path("bundle"), &image],
        "secret.yaml",
    ));
    fs::write(
        env.work.path().join("wrong.json"),
        dockerconfigjson(&env.dist.host, "cli-user", "not-the-password"),
    )
    .unwrap();
    let output = env.run(
        &["bundle", "unpack", &image, &env.path("out")],
        "wrong.json",
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("answered 401 Unauthorized"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "tried pull secrets {:?} (401 Unauthorized)",
            env.path("wrong.json")
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("not-the-password"), "{stderr}");
    assert!(!env.work.path().join("out").exists());
}

#[test]
fn malformed_secret_file_is_reported() {
    let env = Env::new();
    fs::write(env.work.path().join("bad.yaml"), "kind: Secret\nmetadata:\n  name: bad\ntype: kubernetes.io/dockercfg\ndata:\n  .dockercfg: e30=\n").unwrap();
    let output = env.run(
        &[
            "bundle",
            "unpack",
            &env.dist.image("x:v1"),
            &env.path("out"),
        ],
        "bad.yaml",
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("pull secret \"bad\": .dockercfg lists no registries"),
        "{stderr}"
    );
}

#[test]
fn default_credentials_come_from_the_users_docker_config() {
    let env = Env::new();
    write_catalog(&env.work.path().join("catalog"));
    fs::create_dir(env.work.path().join(".docker")).unwrap();
    fs::write(
        env.work.path().join(".docker/config.json"),
        env.dist.dockerconfigjson(),
    )
    .unwrap();
    let output = opcat(
        &[
            "catalog",
            "push",
            &env.path("catalog"),
            &env.dist.image("catalogs/c:v1"),
            "--ca-file",
            &env.dist.ca.pem_path().display().to_string(),
            "--cache-dir",
            &env.path("cache"),
        ],
        env.work.path(),
    );
    ok(&output);
}

#[tokio::test]
async fn source_resolution_for_catalog_commands() {
    let env = Env::new();
    write_catalog(&env.work.path().join("catalog"));
    write_bundle(&env.work.path().join("bundle"));
    let catalog_image = env.dist.image("catalogs/c:v1");
    let bundle_image = env.dist.image("bundles/b:v1");
    ok(&env.run(
        &["catalog", "push", &env.path("catalog"), &catalog_image],
        "secret.yaml",
    ));
    ok(&env.run(
        &["bundle", "push", &env.path("bundle"), &bundle_image],
        "secret.yaml",
    ));
    let args = RegistryArgs {
        pull_secrets: vec![env.work.path().join("secret.yaml")],
        ca_files: vec![env.dist.ca.pem_path()],
        plain_http: Vec::new(),
        cache_dir: Some(env.work.path().join("cache")),
    };
    // A path that exists is a path.
    let local = args.local_catalog(&env.path("catalog")).await.unwrap();
    assert!(local.image.is_none());
    // An image is pulled and its configs directory used.
    let pulled = args.local_catalog(&catalog_image).await.unwrap();
    assert_eq!(tree(&pulled.path), tree(&env.work.path().join("catalog")));
    // A bundle image is no catalog.
    let err = args
        .local_catalog(&bundle_image)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "has no operators.operatorframework.io.index.configs.v1 label and no /configs directory"
        ),
        "{err}"
    );
}

#[test]
fn catalog_commands_and_resolve_read_an_image_source() {
    let env = Env::new();
    write_catalog(&env.work.path().join("catalog"));
    let catalog_image = env.dist.image("catalogs/c:v1");
    ok(&env.run(
        &["catalog", "push", &env.path("catalog"), &catalog_image],
        "secret.yaml",
    ));
    let from_dir = ok(&opcat(
        &["catalog", "list", "bundles", &env.path("catalog")],
        env.work.path(),
    ));
    let from_image = ok(&env.run(
        &["catalog", "list", "bundles", &catalog_image],
        "secret.yaml",
    ));
    assert_eq!(from_image, from_dir, "the image holds the same catalog");
    ok(&env.run(&["catalog", "validate", &catalog_image], "secret.yaml"));
    let package = from_dir
        .lines()
        .nth(1)
        .and_then(|line| line.split_whitespace().next())
        .expect("a bundle line")
        .to_owned();
    let resolved = ok(&env.run(
        &["resolve", &catalog_image, "--package", &package],
        "secret.yaml",
    ));
    assert!(
        resolved.contains(&format!("package:  {package}")),
        "{resolved}"
    );
    // Without credentials the pull is refused, and the error names the registry.
    let denied = opcat(
        &[
            "catalog",
            "validate",
            &catalog_image,
            "--ca-file",
            &env.dist.ca.pem_path().display().to_string(),
        ],
        env.work.path(),
    );
    assert_eq!(denied.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&denied.stderr);
    assert!(
        stderr.replace(&env.dist.host, "").contains("401") && stderr.contains(&env.dist.host),
        "{stderr}"
    );
}

#[test]
fn bundle_validate_and_render_read_an_image() {
    let env = Env::new();
    let widget = Path::new(env!("CARGO_MANIFEST_DIR")).join("bundles/widget-operator/1.2.0");
    let image = env.dist.image("bundles/widget-operator:v1.2.0");
    ok(&env.run(
        &["bundle", "push", &widget.display().to_string(), &image],
        "secret.yaml",
    ));
    let stdout = ok(&env.run(&["bundle", "validate", &image], "secret.yaml"));
    assert!(
        stdout.starts_with(&format!("bundle {image} (sha256:"))
            && stdout.ends_with(
                ") is valid: widget-operator.v1.2.0 (package widget-operator), 3 manifests, 0 warnings\n"
            ),
        "{stdout}"
    );
    // The Secret manifest pulls the image and names the copy.
    let stdout = ok(&env.run(
        &[
            "bundle",
            "render",
            &image,
            "--namespace",
            "widgets",
            "--catalog",
            "olm/vendor",
        ],
        "secret.yaml",
    ));
    let copy = opcat::pull_secrets::names::copy_name("olm", "vendor", "registry-creds");
    assert!(
        stdout.contains(&format!("#   Secret {copy} (copy of olm/registry-creds)\n")),
        "{stdout}"
    );
    assert!(!stdout.contains("cli-pass"), "{stdout}");
}
