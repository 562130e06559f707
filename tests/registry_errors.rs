//! What users see when pulls fail against the real registry: each message names the image, the
//! registry and the secrets tried, and never contains a password.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod registry_support;

use std::fs;

use opcat::registry::PullSecret;
use opcat::registry::credentials::DOCKERCFG_TYPE;
use opcat::registry::push::build_catalog_image;
use opcat::registry::{ImageRef, Keyring, PullAuth, RegistryError};
use registry_support::*;
use test_registry::{Distribution, User, dockerconfigjson};

async fn seeded(dist: &Distribution, repository: &str) -> (tempfile::TempDir, ImageRef) {
    let work = tempfile::tempdir().unwrap();
    let catalog = work.path().join("catalog");
    write_catalog(&catalog);
    let image: ImageRef = dist.image(&format!("{repository}:v1")).parse().unwrap();
    registry_for(dist, &work.path().join("push-cache"))
        .push(
            &image,
            &build_catalog_image(&catalog).unwrap(),
            &keyring_for(dist, "pusher"),
        )
        .await
        .unwrap();
    (work, image)
}

fn keyring(secrets: &[(&str, String)]) -> Keyring {
    let secrets: Vec<PullSecret> = secrets
        .iter()
        .map(|(name, json)| secret(name, json))
        .collect();
    let (keyring, errors) = Keyring::from_secrets(&secrets);
    assert!(errors.is_empty(), "{errors:?}");
    keyring
}

/// Asserts the fetch failed, nothing was cached, and returns the message.
async fn fetch_error(
    dist: &Distribution,
    image: &ImageRef,
    keyring: &Keyring,
) -> (String, RegistryError) {
    let cache = tempfile::tempdir().unwrap();
    let err = registry_for(dist, cache.path())
        .fetch(image, keyring)
        .await
        .unwrap_err();
    assert_eq!(
        fs::read_dir(cache.path().join("images")).unwrap().count(),
        0
    );
    assert_eq!(fs::read_dir(cache.path().join("tmp")).unwrap().count(), 0);
    (err.to_string(), err)
}

#[tokio::test]
async fn wrong_password_basic() {
    let dist = Distribution::basic("alice", "right-pass");
    let (_work, image) = seeded(&dist, "catalogs/c").await;
    let bad = keyring(&[(
        "stale-secret",
        dockerconfigjson(&dist.host, "alice", "wrong-pass"),
    )]);
    let (message, err) = fetch_error(&dist, &image, &bad).await;
    assert_eq!(err.kind(), "unauthorized");
    assert!(
        message.starts_with(&format!(
            "pull of {image}: registry {} answered 401 Unauthorized",
            dist.host
        )),
        "{message}"
    );
    assert!(
        message.ends_with("tried pull secrets \"stale-secret\" (401 Unauthorized)"),
        "{message}"
    );
    assert!(
        !message.contains("wrong-pass") && !message.contains("alice"),
        "{message}"
    );
}

#[tokio::test]
async fn wrong_password_token() {
    let dist = Distribution::token(vec![User::new("bob", "right-pass")]);
    let (_work, image) = seeded(&dist, "catalogs/c").await;
    let bad = keyring(&[(
        "stale-secret",
        dockerconfigjson(&dist.host, "bob", "wrong-pass"),
    )]);
    let (message, err) = fetch_error(&dist, &image, &bad).await;
    assert_eq!(err.kind(), "unauthorized");
    assert!(
        message.contains("token server refused the credentials"),
        "{message}"
    );
    assert!(
        message.contains("tried pull secrets \"stale-secret\" (401 Unauthorized)"),
        "{message}"
    );
    assert!(!message.contains("wrong-pass"), "{message}");
}

#[tokio::test]
async fn no_credentials_at_all() {
    let dist = Distribution::basic("alice", "pw");
    let (_work, image) = seeded(&dist, "catalogs/c").await;
    let (message, err) = fetch_error(&dist, &image, &Keyring::empty()).await;
    assert_eq!(err.kind(), "unauthorized");
    assert!(
        message.ends_with("no credential matches this registry, tried anonymously"),
        "{message}"
    );
}

#[tokio::test]
async fn credentials_for_another_host_are_not_sent() {
    let dist = Distribution::basic("alice", "pw");
    let (_work, image) = seeded(&dist, "catalogs/c").await;
    // Same user and password, but for another port: the kubelet would not use it, nor do we.
    let other = dist.host.replace("127.0.0.1:", "127.0.0.1:1");
    let keyring = keyring(&[("other-host", dockerconfigjson(&other, "alice", "pw"))]);
    let (message, _) = fetch_error(&dist, &image, &keyring).await;
    assert!(
        message.ends_with(
            "no credential matches this registry (pull secrets \"other-host\"), tried anonymously"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn each_matching_secret_is_tried_in_kubelet_order() {
    let dist = Distribution::basic("alice", "pw");
    let (_work, image) = seeded(&dist, "catalogs/c").await;
    let cache = tempfile::tempdir().unwrap();
    let registry = registry_for(&dist, cache.path());
    let keyring = keyring(&[
        ("rotated-out", dockerconfigjson(&dist.host, "alice", "old")),
        ("current", dockerconfigjson(&dist.host, "alice", "pw")),
    ]);
    let check = registry.check_pullable(&image, &keyring).await.unwrap();
    assert_eq!(check.auth, PullAuth::Secret("current".to_owned()));
    registry.fetch(&image, &keyring).await.unwrap();
}

#[tokio::test]
async fn token_scoped_to_another_repository() {
    let dist = Distribution::token(vec![
        User::new("admin", "admin-pass"),
        User::scoped("team-a", "a-pass", &["catalogs/a"]),
    ]);
    let (_work, image_b) = seeded(&dist, "catalogs/b").await;
    let (_work_a, image_a) = seeded(&dist, "catalogs/a").await;
    let team_a = keyring(&[(
        "team-a-secret",
        dockerconfigjson(&dist.host, "team-a", "a-pass"),
    )]);
    let cache = tempfile::tempdir().unwrap();
    registry_for(&dist, cache.path())
        .fetch(&image_a, &team_a)
        .await
        .unwrap();
    let (message, err) = fetch_error(&dist, &image_b, &team_a).await;
    assert_eq!(err.kind(), "unauthorized");
    assert!(message.contains(&format!("pull of {image_b}")), "{message}");
    assert!(
        message.ends_with("tried pull secrets \"team-a-secret\" (401 Unauthorized)"),
        "{message}"
    );
}

#[tokio::test]
async fn unknown_tag_and_repository() {
    let dist = Distribution::basic("alice", "pw");
    let (_work, _) = seeded(&dist, "catalogs/c").await;
    let keyring = keyring_for(&dist, "s");
    let missing_tag: ImageRef = dist.image("catalogs/c:nope").parse().unwrap();
    let (message, err) = fetch_error(&dist, &missing_tag, &keyring).await;
    assert_eq!(err.kind(), "not_found");
    assert_eq!(
        message,
        format!(
            "pull of {missing_tag}: registry {} answered 404 Not Found (MANIFEST_UNKNOWN: manifest unknown)",
            dist.host
        )
    );
    let missing_repo: ImageRef = dist.image("catalogs/none:v1").parse().unwrap();
    let (message, _) = fetch_error(&dist, &missing_repo, &keyring).await;
    // distribution 2.8 answers MANIFEST_UNKNOWN for unknown repositories too.
    assert_eq!(err_kind(&missing_repo, &dist, &keyring).await, "not_found");
    assert!(
        message.contains(&format!(
            "pull of {missing_repo}: registry {} answered 404 Not Found",
            dist.host
        )),
        "{message}"
    );
}

async fn err_kind(image: &ImageRef, dist: &Distribution, keyring: &Keyring) -> &'static str {
    fetch_error(dist, image, keyring).await.1.kind()
}

#[tokio::test]
async fn unknown_ca_is_a_tls_error() {
    let dist = Distribution::basic("alice", "pw");
    let (_work, image) = seeded(&dist, "catalogs/c").await;
    let other = tempfile::tempdir().unwrap();
    let stranger = test_registry::TestCa::create(other.path(), "stranger");
    let cache = tempfile::tempdir().unwrap();
    let registry = registry_trusting(&stranger.pem_path(), cache.path());
    let err = registry
        .fetch(&image, &keyring_for(&dist, "s"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "tls");
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("pull of {image}: TLS connection to registry {} failed: invalid peer certificate: UnknownIssuer", dist.host)),
        "{message}"
    );
}

#[tokio::test]
async fn nothing_listening_is_a_connection_error() {
    let port = test_registry::free_port();
    let cache = tempfile::tempdir().unwrap();
    let ca = tempfile::tempdir().unwrap();
    let registry = registry_trusting(
        &test_registry::TestCa::create(ca.path(), "x").pem_path(),
        cache.path(),
    );
    let image: ImageRef = format!("127.0.0.1:{port}/c:v1").parse().unwrap();
    let err = registry.fetch(&image, &Keyring::empty()).await.unwrap_err();
    assert_eq!(err.kind(), "connection", "{err}");
    assert!(
        err.to_string()
            .contains(&format!("cannot reach registry 127.0.0.1:{port}")),
        "{err}"
    );
}

#[test]
fn malformed_pull_secrets_of_both_types() {
    let json_secret = secret(
        "broken-json",
        "{\"auths\": {\"r.io\": {\"auth\": \"%%%\"}}}",
    );
    let cfg_secret = PullSecret {
        name: "broken-cfg".to_owned(),
        type_: DOCKERCFG_TYPE.to_owned(),
        data: [(".dockercfg".to_owned(), b"[\"not a map\"]".to_vec())].into(),
    };
    let missing_key = PullSecret {
        name: "wrong-key".to_owned(),
        type_: DOCKERCFG_TYPE.to_owned(),
        data: [(".dockerconfigjson".to_owned(), b"{}".to_vec())].into(),
    };
    let good = secret("good", &dockerconfigjson("r.io", "u", "p"));
    let (keyring, errors) = Keyring::from_secrets(&[json_secret, cfg_secret, missing_key, good]);
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "pull secret \"broken-json\": field \"auth\" of registry entry \"r.io\" is not valid base64",
            "pull secret \"broken-cfg\": .dockercfg must be a JSON object",
            "pull secret \"wrong-key\" of type \"kubernetes.io/dockercfg\" has no data key \".dockercfg\"",
        ]
    );
    assert_eq!(keyring.secret_names(), ["good"]);
}
