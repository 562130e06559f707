//! Secret data never appears in rendered text (DESIGN invariant 8).

use base64::Engine;

use super::{MARKER, World, csv, source};
use crate::pull_secrets::copy::{Redacted, desired_copy, plan_copy};

/// Every way the marker could show up: as text, base64 (how the API renders data), and the
/// decimal bytes a derived `Debug` of `ByteString` prints.
fn assert_no_secret(text: &str) {
    let base64 = base64::engine::general_purpose::STANDARD.encode(MARKER);
    let bytes: Vec<String> = MARKER.bytes().take(6).map(|b| b.to_string()).collect();
    assert!(!text.contains(MARKER), "plain secret in: {text}");
    assert!(!text.contains(&base64[..12]), "base64 secret in: {text}");
    assert!(!text.contains(&bytes.join(", ")), "secret bytes in: {text}");
    assert!(!text.contains("robot"), "username in: {text}");
}

#[test]
fn plans_conditions_events_and_errors_hold_no_secret_data() {
    let mut world = World::new(&["quay-pull", "opaque"], vec![csv("op.v1", &["operator"])]);
    world.sources.get_mut("opaque").expect("fixture").type_ = Some("Opaque".to_owned());
    let plan = world.plan();
    assert!(!plan.copy_writes.is_empty());
    assert_no_secret(&format!("{plan:?}"));
    assert_no_secret(&format!("{:?}", plan.conditions()));
    assert_no_secret(&format!("{:?}", plan.events()));
    for error in &plan.invalid_sources {
        assert_no_secret(&format!("{error} {error:?}"));
    }
    world.apply(&plan);
    world.sources.insert(
        "quay-pull".to_owned(),
        source("quay-pull", "other-password"),
    );
    let rotation = world.plan();
    assert_no_secret(&format!("{rotation:?} {:?}", rotation.events()));
}

#[test]
fn copy_actions_and_redacted_secrets_show_keys_not_values() {
    let secret = source("quay-pull", MARKER);
    let copy = desired_copy(
        &secret,
        &super::catalog(),
        "quay-pull",
        super::NAMESPACE,
        &[],
        &crate::pull_secrets::scoping::CopyScope::of(None, [super::IMAGE]),
    )
    .expect("valid")
    .expect("the image needs the secret");
    let rendered = format!("{:?} {:?}", plan_copy(None, &copy), Redacted(&secret));
    assert_no_secret(&rendered);
    assert!(rendered.contains(".dockerconfigjson"), "{rendered}");
    // The check itself works: the plain Debug of the Secret does leak.
    let leaky = format!("{secret:?}");
    let bytes: Vec<String> = MARKER.bytes().take(6).map(|b| b.to_string()).collect();
    assert!(leaky.contains(&bytes.join(", ")), "{leaky}");
}
