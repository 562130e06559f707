//! The review APIs: SubjectAccessReview and its local, self and rules variants
//! (`pkg/registry/authorization/*/rest.go`, validation in `pkg/apis/authorization/validation`)
//! and TokenReview (`pkg/registry/authentication/tokenreview/storage.go`).

use k8s_openapi::api::authentication::v1::TokenReview;
use k8s_openapi::api::authorization::v1::{
    LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview, SubjectAccessReview,
    SubjectAccessReviewStatus,
};
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::common::{assert_invalid, status};
use crate::rbac::{binding, rbac_server, role, seed, user};

fn sar(spec: serde_json::Value) -> SubjectAccessReview {
    serde_json::from_value(json!({"apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview", "spec": spec}))
    .unwrap()
}

async fn review(
    api: &Api<SubjectAccessReview>,
    spec: serde_json::Value,
) -> SubjectAccessReviewStatus {
    api.create(&PostParams::default(), &sar(spec))
        .await
        .unwrap()
        .status
        .unwrap()
}

/// A SubjectAccessReview is answered by the RBAC authorizer: `allowed` with RBAC's reason
/// naming the binding, role and subject; a denial is `allowed: false` with no reason and never
/// `denied` (RBAC has no deny rules); `system:masters` is allowed with no reason.
#[tokio::test]
async fn subject_access_reviews_answer_from_rbac() {
    let server = rbac_server();
    seed(
        &server,
        role(
            "a",
            "cm-reader",
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]),
        ),
    );
    seed(
        &server,
        binding(
            "a",
            "readers",
            ("Role", "cm-reader"),
            json!([{"kind": "Group", "name": "team-a"}, {"kind": "ServiceAccount", "name": "robot"}]),
        ),
    );
    let api: Api<SubjectAccessReview> = Api::all(server.client());
    let get_cm = |ns: &str| json!({"verb": "get", "resource": "configmaps", "namespace": ns, "name": "settings"});
    let status = review(
        &api,
        json!({"user": "alice", "groups": ["team-a"], "resourceAttributes": get_cm("a")}),
    )
    .await;
    assert!(status.allowed);
    assert_eq!(
        status.reason.as_deref(),
        Some(r#"RBAC: allowed by RoleBinding "readers/a" of Role "cm-reader" to Group "team-a""#)
    );
    let status = review(
        &api,
        json!({"user": "system:serviceaccount:a:robot", "resourceAttributes": get_cm("a")}),
    )
    .await;
    assert_eq!(
        status.reason.as_deref(),
        Some(
            r#"RBAC: allowed by RoleBinding "readers/a" of Role "cm-reader" to ServiceAccount "robot/a""#
        )
    );
    let status = review(
        &api,
        json!({"user": "alice", "groups": ["team-a"], "resourceAttributes": get_cm("b")}),
    )
    .await;
    assert!(!status.allowed);
    assert_eq!((status.denied, status.reason), (None, None));
    let status = review(
        &api,
        json!({"user": "x", "groups": ["system:masters"], "resourceAttributes": get_cm("b")}),
    )
    .await;
    assert!(status.allowed);
    let status = review(
        &api,
        json!({"user": "bob", "nonResourceAttributes": {"verb": "get", "path": "/version"}}),
    )
    .await;
    assert!(
        !status.allowed,
        "SAR users get no implicit system:authenticated"
    );
    let status = review(
        &api,
        json!({"user": "bob", "groups": ["system:authenticated"],
        "nonResourceAttributes": {"verb": "get", "path": "/version"}}),
    )
    .await;
    assert_eq!(
        status.reason.as_deref(),
        Some(
            r#"RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated""#
        ),
        "the first binding in name order that allows it"
    );
}

/// A SubjectAccessReview needs a user or a group and exactly one kind of attributes (422).
#[tokio::test]
async fn subject_access_reviews_are_validated() {
    let server = rbac_server();
    let api: Api<SubjectAccessReview> = Api::all(server.client());
    let no_user = api
        .create(
            &PostParams::default(),
            &sar(json!({"resourceAttributes": {"verb": "get"}})),
        )
        .await;
    assert_invalid(
        no_user,
        "spec.user",
        r#"Invalid value: "": at least one of user or group must be specified"#,
    );
    let neither = api
        .create(&PostParams::default(), &sar(json!({"user": "alice"})))
        .await;
    let err = status(neither);
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains(
            "exactly one of nonResourceAttributes or resourceAttributes must be specified"
        ),
        "{}",
        err.message
    );
}

/// Creating a SubjectAccessReview is itself authorized: a user without
/// `system:auth-delegator` gets 403; self reviews are open to every authenticated user
/// (`system:basic-user`) and ask about the caller.
#[tokio::test]
async fn self_reviews_ask_about_the_caller() {
    let server = rbac_server();
    seed(
        &server,
        binding("a", "alice-edit", ("ClusterRole", "edit"), user("alice")),
    );
    let alice = server.client_with_token("alice-token");
    let reviews: Api<SubjectAccessReview> = Api::all(alice.clone());
    let err = status(
        reviews
            .create(
                &PostParams::default(),
                &sar(json!({"user": "bob", "resourceAttributes": {"verb": "get"}})),
            )
            .await,
    );
    assert_eq!(err.code, 403);
    let api: Api<SelfSubjectAccessReview> = Api::all(alice.clone());
    let ask = |ns: &str, verb: &str| -> SelfSubjectAccessReview {
        serde_json::from_value(json!({"spec": {"resourceAttributes":
            {"verb": verb, "resource": "secrets", "namespace": ns}}}))
        .unwrap()
    };
    let answer = api
        .create(&PostParams::default(), &ask("a", "create"))
        .await
        .unwrap();
    assert!(answer.status.unwrap().allowed, "edit writes secrets");
    let answer = api
        .create(&PostParams::default(), &ask("b", "create"))
        .await
        .unwrap();
    assert!(!answer.status.unwrap().allowed);
    let rules: Api<SelfSubjectRulesReview> = Api::all(alice);
    let answer = rules
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"spec": {"namespace": "a"}})).unwrap(),
        )
        .await
        .unwrap()
        .status
        .unwrap();
    assert!(!answer.incomplete);
    assert!(answer.resource_rules.iter().any(|r| {
        r.resources
            .as_deref()
            .unwrap_or_default()
            .contains(&"secrets".to_string())
            && r.verbs.contains(&"create".to_string())
    }));
    assert!(answer.non_resource_rules.iter().any(|r| {
        r.non_resource_urls
            .as_deref()
            .unwrap_or_default()
            .contains(&"/version".to_string())
    }));
}

/// A LocalSubjectAccessReview is namespaced: its attributes must name its namespace (422
/// otherwise); `admin` may create them in its namespace (`system:aggregate-to-admin`).
#[tokio::test]
async fn local_subject_access_reviews_stay_in_their_namespace() {
    let server = rbac_server();
    seed(
        &server,
        binding("a", "alice-admin", ("ClusterRole", "admin"), user("alice")),
    );
    let api: Api<LocalSubjectAccessReview> =
        Api::namespaced(server.client_with_token("alice-token"), "a");
    let local = |ns: &str| -> LocalSubjectAccessReview {
        serde_json::from_value(json!({"spec": {"user": "alice",
            "resourceAttributes": {"verb": "delete", "resource": "configmaps", "namespace": ns}}}))
        .unwrap()
    };
    let answer = api
        .create(&PostParams::default(), &local("a"))
        .await
        .unwrap();
    assert!(answer.status.unwrap().allowed);
    assert_eq!(answer.metadata.namespace.as_deref(), Some("a"));
    assert_invalid(
        api.create(&PostParams::default(), &local("b")).await,
        "spec.resourceAttributes.namespace",
        r#"Invalid value: "b": must match metadata.namespace"#,
    );
}

/// TokenReview reports who a token is (user, uid, groups, the API server's audience), and
/// `authenticated: false` with `invalid bearer token` for an unknown token or another
/// audience; the reviewer needs `system:auth-delegator`.
#[tokio::test]
async fn token_reviews_come_from_the_token_table() {
    let server = rbac_server();
    let token = server.service_account_token("a", "default");
    let reviewer_token = server.service_account_token("a", "reviewer");
    seed(
        &server,
        binding(
            "",
            "reviewer-delegates",
            ("ClusterRole", "system:auth-delegator"),
            json!([{"kind": "ServiceAccount", "name": "reviewer", "namespace": "a"}]),
        ),
    );
    let sa: k8s_openapi::api::core::v1::ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "reviewer", "namespace": "a"}}))
            .unwrap();
    server.seed(&sa).unwrap();
    let review = |token: &str, audiences: serde_json::Value| -> TokenReview {
        serde_json::from_value(json!({"spec": {"token": token, "audiences": audiences}})).unwrap()
    };
    let api: Api<TokenReview> = Api::all(server.client_with_token(&reviewer_token));
    let answer = api
        .create(&PostParams::default(), &review(&token, json!([])))
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(answer.authenticated, Some(true));
    let user = answer.user.unwrap();
    assert_eq!(
        user.username.as_deref(),
        Some("system:serviceaccount:a:default")
    );
    let uid = server
        .get::<k8s_openapi::api::core::v1::ServiceAccount>("a", "default")
        .unwrap()
        .metadata
        .uid;
    assert_eq!(user.uid, uid);
    assert_eq!(
        answer.audiences.unwrap(),
        ["https://kubernetes.default.svc.cluster.local"]
    );
    let answer = api
        .create(&PostParams::default(), &review("bogus", json!([])))
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(
        (answer.authenticated, answer.error.as_deref()),
        (None, Some("invalid bearer token"))
    );
    let answer = api
        .create(
            &PostParams::default(),
            &review("alice-token", json!(["https://elsewhere"])),
        )
        .await
        .unwrap()
        .status
        .unwrap();
    assert_ne!(answer.authenticated, Some(true));
    let bob: Api<TokenReview> = Api::all(server.client_with_token("bob-token"));
    assert_eq!(
        status(
            bob.create(&PostParams::default(), &review(&token, json!([])))
                .await
        )
        .code,
        403
    );
}
