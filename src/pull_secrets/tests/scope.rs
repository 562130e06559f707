use std::collections::BTreeMap;

use kube::core::SelectorExt;

use super::catalog;
use crate::pull_secrets::names::{NAMESPACE_OPT_OUT_LABEL, PROPAGATE_TO_ANNOTATION};
use crate::pull_secrets::scope::{NotPropagated, propagation_allowed};
use crate::pull_secrets::selector::{SelectorError, parse_selector};
use crate::pull_secrets::vocabulary::{
    REASON_INVALID_PROPAGATION_SELECTOR, REASON_NAMESPACE_NOT_SELECTED, REASON_NAMESPACE_OPTED_OUT,
};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

fn selects(selector: &str, pairs: &[(&str, &str)]) -> bool {
    parse_selector(selector)
        .unwrap_or_else(|error| panic!("{selector}: {error}"))
        .matches(&labels(pairs))
}

#[test]
fn selector_syntax_matches_kubectl() {
    let env_prod = [("env", "prod"), ("tier", "gold")];
    assert!(selects("env=prod", &env_prod));
    assert!(selects("env==prod", &env_prod));
    assert!(!selects("env!=prod", &env_prod));
    assert!(selects("env!=dev", &[]), "!= matches a missing key");
    assert!(selects("env in (dev, prod)", &env_prod));
    assert!(!selects("env notin (prod)", &env_prod));
    assert!(selects("env notin (prod)", &[]));
    assert!(selects("tier", &env_prod));
    assert!(!selects("!tier", &env_prod));
    assert!(selects("!legacy", &env_prod));
    assert!(
        selects(" env = prod , tier in (gold,silver) ,!legacy", &env_prod),
        "comma is AND"
    );
    assert!(!selects("env=prod,tier=silver", &env_prod));
    assert!(selects(
        "kubernetes.io/metadata.name in (team-a)",
        &[("kubernetes.io/metadata.name", "team-a")]
    ));
    assert!(selects("env=", &[("env", "")]), "empty value");
}

#[test]
fn bad_selectors_are_refused_with_the_reason() {
    let cases = [
        ("", "empty"),
        ("   ", "empty"),
        ("env=prod,", "unexpected end"),
        ("env in prod", "'('"),
        ("env in (a,b", "')'"),
        ("env prod", "an operator"),
        ("Bad Key=x", "an operator"),
        ("-bad=x", "not a valid label key"),
        ("env=not valid!", "expected ',' or the end"),
        ("env=-x", "not a valid label value"),
        ("replicas>3", "not supported"),
        ("!", "unexpected end after \"!\""),
    ];
    for (text, expected) in cases {
        let error = parse_selector(text).expect_err(text);
        assert!(error.to_string().contains(expected), "{text:?}: {error}");
    }
    assert_eq!(parse_selector(""), Err(SelectorError::Empty));
}

fn annotated(selector: &str) -> BTreeMap<String, String> {
    labels(&[(PROPAGATE_TO_ANNOTATION, selector)])
}

#[test]
fn without_annotation_every_namespace_is_allowed() {
    assert_eq!(
        propagation_allowed(&catalog(), None, "team-a", None),
        Ok(())
    );
    let other = labels(&[("unrelated", "x")]);
    assert_eq!(
        propagation_allowed(&catalog(), Some(&other), "team-a", None),
        Ok(())
    );
}

#[test]
fn selector_restricts_namespaces_and_can_use_the_name_label() {
    let by_name = annotated("kubernetes.io/metadata.name in (team-a,team-b)");
    assert_eq!(
        propagation_allowed(&catalog(), Some(&by_name), "team-a", None),
        Ok(())
    );
    let refused = propagation_allowed(&catalog(), Some(&by_name), "intruder", None).unwrap_err();
    assert!(matches!(refused, NotPropagated::NotSelected { .. }));
    assert_eq!(refused.reason(), REASON_NAMESPACE_NOT_SELECTED);
    assert!(refused.withdraws_copies());
    let message = refused.to_string();
    assert!(
        message.contains("intruder")
            && message.contains("team-a,team-b")
            && message.contains("olm/private-catalog"),
        "{message}"
    );

    let by_label = annotated("opcat.example/tenant=gold");
    let gold = labels(&[("opcat.example/tenant", "gold")]);
    assert_eq!(
        propagation_allowed(&catalog(), Some(&by_label), "team-c", Some(&gold)),
        Ok(())
    );
}

#[test]
fn namespace_opt_out_wins_over_the_selector() {
    let opted_out = labels(&[(NAMESPACE_OPT_OUT_LABEL, "disabled")]);
    let refused = propagation_allowed(&catalog(), None, "team-a", Some(&opted_out)).unwrap_err();
    assert_eq!(refused.reason(), REASON_NAMESPACE_OPTED_OUT);
    assert!(
        refused
            .to_string()
            .contains("opcat.dev/pull-secret-propagation=disabled")
    );
    let enabled = labels(&[(NAMESPACE_OPT_OUT_LABEL, "enabled")]);
    assert_eq!(
        propagation_allowed(&catalog(), None, "team-a", Some(&enabled)),
        Ok(())
    );
    let unclear = labels(&[(NAMESPACE_OPT_OUT_LABEL, "no")]);
    assert!(
        propagation_allowed(&catalog(), None, "team-a", Some(&unclear)).is_err(),
        "unknown value opts out"
    );
}

#[test]
fn invalid_selector_fails_closed_everywhere_without_revoking() {
    for selector in ["", "env in (prod", "replicas>3"] {
        let annotations = annotated(selector);
        let refused =
            propagation_allowed(&catalog(), Some(&annotations), "team-a", None).unwrap_err();
        assert_eq!(
            refused.reason(),
            REASON_INVALID_PROPAGATION_SELECTOR,
            "{selector:?}"
        );
        assert!(!refused.withdraws_copies());
        assert!(
            refused.to_string().contains("not a valid label selector"),
            "{refused}"
        );
    }
}
