use super::*;
use crate::api::ClusterServiceVersionPhase as Phase;

fn map(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect(),
    )
}

fn original() -> ClusterServiceVersion {
    let mut csv = ClusterServiceVersion::new("widget.v1.0.0", Default::default());
    csv.metadata.namespace = Some("operators".into());
    csv.metadata.uid = Some("uid-1".into());
    csv.metadata.resource_version = Some("42".into());
    csv.metadata.finalizers = Some(vec!["opcat.dev/cleanup".into()]);
    csv.metadata.annotations = map(&[
        ("olm.targetNamespaces", ""),
        ("olm.operatorGroup", "global"),
        ("olm.operatorNamespace", "operators"),
        ("kubectl.kubernetes.io/last-applied-configuration", "{}"),
        ("alm-examples", "[]"),
    ]);
    csv.metadata.labels = map(&[
        ("operators.coreos.com/widget.operators", ""),
        ("app.kubernetes.io/managed-by", "opcat"),
    ]);
    csv.spec.version = Some("1.0.0".into());
    csv.status = Some(ClusterServiceVersionStatus {
        phase: Some(Phase::Succeeded),
        reason: Some(csv_reasons::INSTALL_SUCCEEDED.into()),
        message: Some("install strategy completed with no errors".into()),
        ..Default::default()
    });
    csv
}

#[test]
fn a_copy_keeps_name_spec_and_phase_and_drops_what_olm_drops() {
    let copy = prototype(&original());
    assert_eq!(copy.metadata.name.as_deref(), Some("widget.v1.0.0"));
    assert_eq!(copy.metadata.namespace, None);
    assert_eq!(copy.metadata.uid, None);
    assert_eq!(copy.metadata.resource_version, None);
    assert_eq!(copy.metadata.finalizers, None, "a copy holds no cleanup");
    assert_eq!(
        copy.metadata.annotations,
        map(&[
            ("alm-examples", "[]"),
            ("olm.operatorGroup", "global"),
            ("olm.operatorNamespace", "operators"),
        ])
    );
    assert_eq!(
        copy.metadata.labels,
        map(&[
            ("app.kubernetes.io/managed-by", "opcat"),
            ("olm.copiedFrom", "operators"),
        ])
    );
    assert_eq!(copy.spec, original().spec);
    let status = copy.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Succeeded));
    assert_eq!(status.reason.as_deref(), Some("Copied"));
    assert_eq!(
        status.message.as_deref(),
        Some("The operator is running in operators but is managing this namespace")
    );
}

#[test]
fn copies_follow_the_phase_of_the_original() {
    let mut installing = original();
    installing.status.as_mut().unwrap().phase = Some(Phase::Installing);
    let copy = prototype(&installing);
    assert_eq!(copy.status.unwrap().phase, Some(Phase::Installing));
}

#[test]
fn a_copy_is_recognised_by_its_label_or_reason() {
    assert!(!is_copy(&original()));
    assert!(is_copy(&prototype(&original())));
    let mut reason_only = original();
    reason_only.status.as_mut().unwrap().reason = Some("Copied".into());
    assert!(is_copy(&reason_only));
}

#[test]
fn csvs_without_a_phase_or_with_a_group_problem_are_not_copied() {
    assert!(is_uncopiable(None));
    assert!(is_uncopiable(Some(&ClusterServiceVersionStatus::default())));
    let mut status = original().status.unwrap();
    assert!(!is_uncopiable(Some(&status)));
    status.phase = Some(Phase::Failed);
    status.reason = Some(csv_reasons::TOO_MANY_OPERATOR_GROUPS.into());
    assert!(is_uncopiable(Some(&status)));
    status.reason = Some(csv_reasons::INSTALL_COMPONENT_FAILED.into());
    assert!(!is_uncopiable(Some(&status)), "a failed install is copied");
}

#[test]
fn hashes_change_with_the_part_they_cover_only() {
    let base = Hashes::of(&prototype(&original()));
    assert_eq!(base, Hashes::of(&prototype(&original())), "deterministic");
    // What a copy drops does not change what it is written from.
    let mut retargeted = original();
    retargeted
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert("olm.targetNamespaces".into(), "a,b".into());
    retargeted.metadata.resource_version = Some("43".into());
    assert_eq!(Hashes::of(&prototype(&retargeted)), base);

    let mut new_status = original();
    new_status.status.as_mut().unwrap().phase = Some(Phase::Failed);
    let hashes = Hashes::of(&prototype(&new_status));
    assert_eq!(hashes.non_status, base.non_status);
    assert_ne!(hashes.status, base.status);

    let mut new_spec = original();
    new_spec.spec.version = Some("1.0.1".into());
    let hashes = Hashes::of(&prototype(&new_spec));
    assert_ne!(hashes.non_status, base.non_status);
    assert_eq!(hashes.status, base.status);
}

#[test]
fn the_copy_for_a_namespace_carries_its_non_status_hash() {
    let proto = prototype(&original());
    let hashes = Hashes::of(&proto);
    let copy = for_namespace(&proto, "team-a", &hashes);
    assert_eq!(copy.metadata.namespace.as_deref(), Some("team-a"));
    let annotations = copy.metadata.annotations.unwrap();
    assert_eq!(annotations[NON_STATUS_HASH], hashes.non_status);
    assert!(!annotations.contains_key(STATUS_HASH));
}

#[test]
fn wanted_namespaces_follow_the_group_and_the_switch() {
    let live = ["operators", "team-a", "team-b", "kube-system"];
    let all: Vec<&str> = wanted_namespaces("operators", Reach::of(&[String::new()]), live, false)
        .into_iter()
        .collect();
    assert_eq!(all, ["kube-system", "team-a", "team-b"]);
    assert!(wanted_namespaces("operators", Reach::of(&[String::new()]), live, true).is_empty());
    let targets = [
        "operators".to_owned(),
        "team-a".to_owned(),
        "gone".to_owned(),
    ];
    let some: Vec<&str> = wanted_namespaces("operators", Reach::of(&targets), live, true)
        .into_iter()
        .collect();
    assert_eq!(
        some,
        ["team-a"],
        "the switch only concerns AllNamespaces installs"
    );
    let own = ["operators".to_owned()];
    assert!(wanted_namespaces("operators", Reach::of(&own), live, false).is_empty());
}

#[test]
fn the_plan_writes_only_what_is_out_of_date() {
    let hashes = Hashes {
        non_status: "n1".into(),
        status: "s1".into(),
    };
    let wanted: BTreeSet<&str> = ["a", "b", "c", "d", "e"].into();
    let existing: BTreeMap<&str, Written<'_>> = [
        (
            "b",
            Written {
                non_status: Some("n1"),
                status: Some("s1"),
            },
        ),
        (
            "c",
            Written {
                non_status: Some("n0"),
                status: Some("s1"),
            },
        ),
        (
            "d",
            Written {
                non_status: Some("n1"),
                status: Some("s0"),
            },
        ),
        (
            "e",
            Written {
                non_status: Some("n1"),
                status: None,
            },
        ),
        (
            "x",
            Written {
                non_status: Some("n1"),
                status: Some("s1"),
            },
        ),
        ("y", Written::default()),
    ]
    .into();
    let keep: BTreeSet<&str> = ["y"].into();
    let plan = plan(&wanted, &existing, &keep, &hashes, true);
    assert_eq!(
        plan,
        Plan {
            create: vec!["a".into()],
            update: vec!["c".into()],
            status: vec!["d".into(), "e".into()],
            delete: vec!["x".into()],
        }
    );

    let converged: BTreeMap<&str, Written<'_>> = wanted
        .iter()
        .map(|namespace| {
            (
                *namespace,
                Written {
                    non_status: Some("n1"),
                    status: Some("s1"),
                },
            )
        })
        .collect();
    assert!(super::plan(&wanted, &converged, &keep, &hashes, true).is_empty());
}

#[test]
fn an_uncopiable_csv_only_loses_unwanted_copies() {
    let hashes = Hashes {
        non_status: "n1".into(),
        status: "s1".into(),
    };
    let wanted: BTreeSet<&str> = ["a", "b"].into();
    let existing: BTreeMap<&str, Written<'_>> =
        [("b", Written::default()), ("z", Written::default())].into();
    let plan = plan(&wanted, &existing, &BTreeSet::new(), &hashes, false);
    assert_eq!(
        plan,
        Plan {
            delete: vec!["z".into()],
            ..Plan::default()
        }
    );
}
