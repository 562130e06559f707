use std::collections::BTreeSet;

use crate::pull_secrets::names::{
    HASH_LEN, MAX_LABEL_VALUE_LEN, MAX_NAME_LEN, copy_name, is_dns1123_subdomain, is_label_key,
    is_label_value, label_value,
};

#[test]
fn copy_name_is_readable_and_deterministic() {
    let name = copy_name("olm", "private-catalog", "quay-pull");
    assert!(name.starts_with("private-catalog-quay-pull-"), "{name}");
    assert_eq!(name.len(), "private-catalog-quay-pull-".len() + HASH_LEN);
    assert_eq!(name, copy_name("olm", "private-catalog", "quay-pull"));
    assert!(is_dns1123_subdomain(&name));
}

#[test]
fn names_that_read_the_same_do_not_collide() {
    // Naive joins: "a-b" + "c" and "a" + "b-c" both read "a-b-c".
    let one = copy_name("ns", "a-b", "c");
    let two = copy_name("ns", "a", "b-c");
    assert!(one.starts_with("a-b-c-") && two.starts_with("a-b-c-"));
    assert_ne!(one, two);
    // Same catalog and secret names in two namespaces.
    assert_ne!(
        copy_name("team-a", "cat", "pull"),
        copy_name("team-b", "cat", "pull")
    );
    // Namespace and catalog boundaries moved.
    assert_ne!(copy_name("a", "bc", "d"), copy_name("ab", "c", "d"));
    // Dots and dashes map to the same readable text but hash apart.
    assert_ne!(copy_name("ns", "cat", "a.b"), copy_name("ns", "cat", "a-b"));
}

#[test]
fn many_distinct_tuples_get_distinct_names() {
    let parts = ["a", "b", "a-b", "b-a", "ab", "a.b", "x", ""];
    let mut seen = BTreeSet::new();
    let mut count = 0;
    for namespace in parts {
        for catalog in parts {
            for secret in parts {
                seen.insert(copy_name(namespace, catalog, secret));
                count += 1;
            }
        }
    }
    assert_eq!(seen.len(), count);
}

/// Exhaustive over component lengths (a deterministic property test): every name is a valid
/// DNS-1123 subdomain of at most 253 characters, and long names keep a prefix of both parts.
#[test]
fn long_and_odd_inputs_give_valid_names() {
    let alphabet = ["a", "Z", "-", ".", "_", "9", "é"];
    for catalog_len in (0..=260).step_by(13) {
        for secret_len in (0..=260).step_by(11) {
            for (index, fill) in alphabet.iter().enumerate() {
                let catalog = format!("c{}", fill.repeat(catalog_len));
                let secret = format!(
                    "s{}",
                    alphabet[(index + 3) % alphabet.len()].repeat(secret_len)
                );
                let name = copy_name("some-namespace", &catalog, &secret);
                assert!(name.len() <= MAX_NAME_LEN, "{} chars: {name}", name.len());
                assert!(is_dns1123_subdomain(&name), "invalid: {name}");
                assert!(name.starts_with('c'), "catalog prefix kept: {name}");
                assert!(name.contains("-s"), "secret prefix kept: {name}");
            }
        }
    }
}

#[test]
fn two_long_names_share_the_room() {
    let catalog = "c".repeat(253);
    let secret = "s".repeat(253);
    let name = copy_name("ns", &catalog, &secret);
    assert_eq!(name.len(), MAX_NAME_LEN);
    let catalog_part = name.chars().take_while(|c| *c == 'c').count();
    let secret_part = name.chars().filter(|c| *c == 's').count();
    assert!(
        catalog_part >= 110 && secret_part >= 110,
        "{catalog_part} / {secret_part}"
    );
    // A short catalog name leaves the room to the secret name.
    let name = copy_name("ns", "cat", &secret);
    assert!(name.starts_with("cat-sss"));
    assert_eq!(name.len(), MAX_NAME_LEN);
}

#[test]
fn label_values_fit_and_stay_distinct() {
    assert_eq!(label_value("quay-pull"), "quay-pull");
    assert_eq!(label_value(""), "");
    let long_one = format!("{}-one", "x".repeat(80));
    let long_two = format!("{}-two", "x".repeat(80));
    for value in [&long_one, &long_two] {
        let label = label_value(value);
        assert!(label.len() <= MAX_LABEL_VALUE_LEN, "{label}");
        assert!(is_label_value(&label), "{label}");
        assert!(label.starts_with("xxxx"));
        assert_eq!(label, label_value(value), "deterministic");
    }
    assert_ne!(label_value(&long_one), label_value(&long_two));
    assert!(is_label_value(&label_value("-.-")));
}

#[test]
fn validators_follow_the_api_rules() {
    assert!(is_dns1123_subdomain("a.b-c.d"));
    for bad in ["", "A", "a..b", "-a", "a-", "a.-b", "a_b", &"a".repeat(254)] {
        assert!(!is_dns1123_subdomain(bad), "{bad}");
    }
    assert!(is_label_key("kubernetes.io/metadata.name"));
    assert!(is_label_key("Team_Name"));
    for bad in ["", "/a", "a/", "A.io/x", "a/b/c", &"k".repeat(64)] {
        assert!(!is_label_key(bad), "{bad}");
    }
}
