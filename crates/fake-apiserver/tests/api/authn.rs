//! Authentication: bearer tokens (`request/bearertoken/bearertoken.go`), the 401 of
//! `endpoints/filters/authentication.go`, ServiceAccount tokens that die with their
//! ServiceAccount (`pkg/serviceaccount` validator), and the admin identity of requests
//! without credentials.

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};

use crate::common::status;
use crate::rbac::{grant, rbac_server};

async fn whoami(client: kube::Client) -> (String, Vec<String>) {
    let api: Api<SelfSubjectReview> = Api::all(client);
    let review = api
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap();
    let user = review.status.unwrap().user_info.unwrap();
    (user.username.unwrap(), user.groups.unwrap_or_default())
}

/// An unknown token is 401 `Unauthorized` on every request, discovery included.
#[tokio::test]
async fn unknown_tokens_are_unauthorized() {
    let server = rbac_server();
    let stranger = server.client_with_token("no-such-token");
    let api: Api<ConfigMap> = Api::namespaced(stranger.clone(), "a");
    let err = status(api.get("settings").await);
    assert_eq!(
        (err.code, err.reason.as_str(), err.message.as_str()),
        (401, "Unauthorized", "Unauthorized")
    );
    let err = stranger.apiserver_version().await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 401));
}

/// Without credentials a request is `system:admin` in `system:masters`; a user token adds
/// `system:authenticated` to the registered groups (`AuthenticatedGroupAdder`).
#[tokio::test]
async fn identities_as_selfsubjectreview_reports_them() {
    let server = rbac_server();
    let (name, groups) = whoami(server.client()).await;
    assert_eq!(name, "system:admin");
    assert_eq!(groups, ["system:masters", "system:authenticated"]);
    let (name, groups) = whoami(server.client_with_token("alice-token")).await;
    assert_eq!(name, "alice");
    assert_eq!(groups, ["team-a", "system:authenticated"]);
}

/// A ServiceAccount token is `system:serviceaccount:<ns>:<name>` in the ServiceAccount
/// groups; it stops authenticating when the ServiceAccount is deleted, and a new
/// ServiceAccount of the same name (another uid) does not revive it.
#[tokio::test]
async fn service_account_tokens_follow_their_service_account() {
    let server = rbac_server();
    let sas: Api<ServiceAccount> = Api::namespaced(server.client(), "a");
    let sa = ServiceAccount {
        metadata: ObjectMeta {
            name: Some("operator".into()),
            ..ObjectMeta::default()
        },
        ..ServiceAccount::default()
    };
    sas.create(&PostParams::default(), &sa).await.unwrap();
    let token = server.service_account_token("a", "operator");
    let (name, groups) = whoami(server.client_with_token(&token)).await;
    assert_eq!(name, "system:serviceaccount:a:operator");
    assert_eq!(
        groups,
        [
            "system:serviceaccounts",
            "system:serviceaccounts:a",
            "system:authenticated"
        ]
    );
    sas.delete("operator", &DeleteParams::default())
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client_with_token(&token), "a");
    assert_eq!(status(api.get("settings").await).code, 401);
    sas.create(&PostParams::default(), &sa).await.unwrap();
    assert_eq!(
        status(api.get("settings").await).code,
        401,
        "bound to the old uid"
    );
}

/// Over HTTP, a kubeconfig made for a token makes another process that identity: the token
/// travels in the `Authorization` header and RBAC applies.
#[tokio::test]
async fn http_kubeconfigs_carry_a_token() {
    let server = rbac_server();
    grant(
        &server,
        "a",
        "reader",
        serde_json::json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]),
        crate::rbac::user("alice"),
    );
    let http = server.serve_http().await.unwrap();
    let path = http.kubeconfig_with_token("alice-token").unwrap();
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    assert_eq!(whoami(client.clone()).await.0, "alice");
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "a");
    assert!(api.get("settings").await.is_ok());
    let other: Api<ConfigMap> = Api::namespaced(client, "b");
    assert_eq!(status(other.get("settings").await).code, 403);
}
