use crate::pull_secrets::preflight::{ImageCheck, ImageOutcome, credentials_condition};
use crate::pull_secrets::vocabulary::{
    ConditionStatus, MAX_MESSAGE_LEN, REASON_IMAGES_RESOLVABLE, REASON_MULTIPLE_FAILURES,
    REASON_UNAUTHORIZED,
};

fn check(image: &str, outcome: ImageOutcome) -> ImageCheck {
    let registry = image.split('/').next().unwrap_or_default().to_owned();
    ImageCheck {
        image: image.to_owned(),
        registry,
        outcome,
    }
}

#[test]
fn all_resolved_or_public_is_ready_and_names_the_public_ones() {
    let condition = credentials_condition(&[
        check(
            "quay.example.com/acme/operator@sha256:aa",
            ImageOutcome::Resolved,
        ),
        check(
            "docker.io/library/busybox:1.36",
            ImageOutcome::NoCredentials,
        ),
    ]);
    assert_eq!(condition.status, ConditionStatus::True);
    assert_eq!(condition.reason, REASON_IMAGES_RESOLVABLE);
    assert_eq!(
        condition.message,
        "1 of 2 images resolved with the pull secrets; docker.io/library/busybox:1.36: no \
         credentials for registry docker.io, assumed public"
    );
}

#[test]
fn a_rejected_credential_names_image_registry_status_and_secrets() {
    let condition = credentials_condition(&[
        check("quay.example.com/acme/operator:v1", ImageOutcome::Resolved),
        check(
            "quay.example.com/acme/agent:v1",
            ImageOutcome::Unauthorized {
                secrets: vec!["private-catalog-quay-pull-0123456789".to_owned()],
            },
        ),
    ]);
    assert_eq!(condition.status, ConditionStatus::False);
    assert_eq!(condition.reason, REASON_UNAUTHORIZED);
    assert_eq!(
        condition.message,
        "1 of 2 images cannot be pulled: quay.example.com/acme/agent:v1: registry \
         quay.example.com rejected the credentials (401) of secrets \
         [private-catalog-quay-pull-0123456789]"
    );
}

#[test]
fn mixed_failures_are_sorted_deduplicated_and_bounded() {
    let mut checks = vec![
        check(
            "b.example.com/x:1",
            ImageOutcome::Forbidden {
                secrets: vec!["s".to_owned()],
            },
        ),
        check("a.example.com/x:1", ImageOutcome::NotFound),
        check("a.example.com/x:1", ImageOutcome::NotFound),
        check(
            "c.example.com/x:1",
            ImageOutcome::Error {
                status: Some(503),
                detail: "service\nunavailable".to_owned(),
            },
        ),
    ];
    let condition = credentials_condition(&checks);
    assert_eq!(condition.reason, REASON_MULTIPLE_FAILURES);
    assert!(
        condition
            .message
            .starts_with("3 of 3 images cannot be pulled: a.example.com/x:1: not found (404)"),
        "{}",
        condition.message
    );
    assert!(
        condition
            .message
            .contains("denied access (403) with secrets [s]")
    );
    assert!(
        condition
            .message
            .contains("answered 503: service unavailable")
    );
    checks.reverse();
    assert_eq!(
        credentials_condition(&checks),
        condition,
        "order of input does not matter"
    );

    let many: Vec<ImageCheck> = (0..200)
        .map(|i| {
            check(
                &format!("r.example.com/image-{i:03}:v1"),
                ImageOutcome::NotFound,
            )
        })
        .collect();
    let condition = credentials_condition(&many);
    assert!(
        condition.message.len() <= MAX_MESSAGE_LEN,
        "{}",
        condition.message.len()
    );
    assert!(
        condition.message.contains("image-000") && condition.message.ends_with(" more"),
        "{}",
        condition.message
    );
}

#[test]
fn long_error_details_are_cut() {
    let condition = credentials_condition(&[check(
        "r.example.com/x:1",
        ImageOutcome::Error {
            status: None,
            detail: "é".repeat(500),
        },
    )]);
    assert!(condition.message.len() < 500, "{}", condition.message);
    assert!(condition.message.ends_with("..."));
}
