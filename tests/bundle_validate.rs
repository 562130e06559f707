//! What opcat refuses to install, the install modes an OperatorGroup's targets need, the service
//! accounts a bundle uses, and the images it runs.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod bundle_support;

use bundle_support::{fixture, load, targets, widget};
use opcat::api::cluster_service_version::InstallModeType;
use opcat::api::csv_reasons;
use opcat::bundle::{
    InstallModeError, InstallProblem, TargetNamespaces, check_install_mode, images,
    install_mode_for, service_accounts, validate_for_install,
};

#[test]
fn the_example_bundles_can_be_installed() {
    for version in ["1.0.0", "1.1.0", "1.1.1", "1.2.0", "2.0.0"] {
        validate_for_install(&load(&widget(version)).csv).unwrap();
    }
    validate_for_install(&load(&fixture("gizmo")).csv).unwrap();
}

#[test]
fn webhooks_and_owned_api_services_can_be_installed() {
    validate_for_install(&load(&fixture("webhook")).csv).unwrap();
}

#[test]
fn webhook_and_api_service_definitions_that_cannot_work_are_all_reported() {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use opcat::api::cluster_service_version::WebhookAdmissionType;

    let mut bundle = load(&fixture("webhook"));
    let spec = &mut bundle.csv.spec;
    let webhooks = spec.webhook_definitions.as_mut().unwrap();
    let valid = webhooks[0].clone();
    let with = |edit: &dyn Fn(&mut opcat::api::cluster_service_version::WebhookDescription)| {
        let mut webhook = valid.clone();
        edit(&mut webhook);
        webhook
    };
    webhooks.extend([
        with(&|w| {
            w.generate_name = "vmissing.example.com".into();
            w.deployment_name = Some("gone".into());
        }),
        with(&|w| {
            w.generate_name = "volm.example.com".into();
            w.rules.as_mut().unwrap()[0].api_groups = Some(vec!["operators.coreos.com".into()]);
        }),
        with(&|w| {
            w.generate_name = "vnoeffects.example.com".into();
            w.side_effects = None;
        }),
        valid.clone(),
        with(&|w| {
            w.generate_name = "cwidgets.example.com".into();
            w.type_ = WebhookAdmissionType::ConversionWebhook;
            w.conversion_crds = Some(vec!["widgets.example.com".into()]);
            w.target_port = Some(IntOrString::Int(9444));
        }),
        with(&|w| {
            w.generate_name = "cempty.example.com".into();
            w.type_ = WebhookAdmissionType::ConversionWebhook;
        }),
    ]);
    spec.api_service_definitions
        .as_mut()
        .unwrap()
        .owned
        .as_mut()
        .unwrap()[0]
        .deployment_name = None;

    let error = validate_for_install(&bundle.csv).unwrap_err();
    assert_eq!(error.kind(), csv_reasons::INVALID_WEBHOOK_DESCRIPTION);
    assert_eq!(
        error.problems,
        [
            InstallProblem::UnknownServingDeployment {
                what: "webhook vmissing.example.com (ValidatingAdmissionWebhook)".to_owned(),
                deployment: "gone".to_owned(),
            },
            InstallProblem::UnknownServingDeployment {
                what: "API service v1beta1.metrics.example.com".to_owned(),
                deployment: String::new(),
            },
            InstallProblem::ForbiddenWebhookRules {
                webhook: "volm.example.com".to_owned(),
                reason: "webhook rules cannot include the OLM group",
            },
            InstallProblem::MissingSideEffects {
                webhook: "vnoeffects.example.com".to_owned(),
            },
            InstallProblem::DuplicateWebhook {
                webhook: "vtiny.example.com".to_owned(),
                kind: WebhookAdmissionType::ValidatingAdmissionWebhook,
                count: 2,
            },
            InstallProblem::ConversionCrdNotOwned {
                webhook: "cwidgets.example.com".to_owned(),
                crd: "widgets.example.com".to_owned(),
            },
            InstallProblem::ConversionWithoutCrds {
                webhook: "cempty.example.com".to_owned(),
            },
            InstallProblem::ConflictingServicePorts {
                deployment: "tiny-controller".to_owned(),
                port: 443,
            },
        ]
    );
    let message = error.to_string();
    assert!(
        message.contains(
            "webhook vmissing.example.com (ValidatingAdmissionWebhook) names Deployment \"gone\""
        ),
        "{message}"
    );
}

#[test]
fn bad_deployments_and_service_account_names_are_all_reported() {
    let bundle = load(&fixture("bad-deployments"));
    let error = validate_for_install(&bundle.csv).unwrap_err();
    assert_eq!(error.kind(), "InvalidInstallStrategy");
    assert_eq!(
        error.problems,
        [
            InstallProblem::NoPodSpec {
                name: "no-pod-template".to_owned()
            },
            InstallProblem::InvalidDeploymentName {
                name: "Tiny_Controller".to_owned()
            },
            InstallProblem::DuplicateDeployment {
                name: "twice".to_owned(),
                count: 2
            },
            InstallProblem::InvalidServiceAccountName {
                field: "permissions",
                name: "Tiny_Account".to_owned()
            },
        ]
    );
}

#[test]
fn only_the_deployment_strategy_exists() {
    let mut bundle = load(&fixture("minimal"));
    bundle.csv.spec.install.strategy = "helm".to_owned();
    let error = validate_for_install(&bundle.csv).unwrap_err();
    assert_eq!(
        error.problems,
        [InstallProblem::UnknownStrategy {
            found: "helm".to_owned()
        }]
    );

    bundle.csv.spec.install.strategy = "deployment".to_owned();
    bundle.csv.spec.install.spec = None;
    let error = validate_for_install(&bundle.csv).unwrap_err();
    assert_eq!(error.problems, [InstallProblem::NoStrategySpec]);
}

#[test]
fn target_namespaces_map_to_install_modes_as_in_olm() {
    let all = TargetNamespaces::from_operator_group(&[String::new()]).unwrap();
    assert_eq!(all, TargetNamespaces::All);
    assert_eq!(all.annotation_value(), "");
    assert_eq!(
        install_mode_for("ops", &all),
        InstallModeType::AllNamespaces
    );
    assert_eq!(
        install_mode_for("ops", &targets(&["ops"])),
        InstallModeType::OwnNamespace
    );
    assert_eq!(
        install_mode_for("ops", &targets(&["team-a"])),
        InstallModeType::SingleNamespace
    );
    let several = targets(&["team-b", "team-a", "team-b"]);
    assert_eq!(
        install_mode_for("ops", &several),
        InstallModeType::MultiNamespace
    );
    assert_eq!(
        several.annotation_value(),
        "team-a,team-b",
        "sorted, unique"
    );
    assert_eq!(
        install_mode_for("ops", &targets(&["ops", "team-a"])),
        InstallModeType::MultiNamespace
    );
}

#[test]
fn operator_groups_that_select_nothing_or_mix_all_with_others_are_refused() {
    let none = TargetNamespaces::from_operator_group(&[]).unwrap_err();
    assert_eq!(none, InstallModeError::NoTargetNamespaces);
    assert_eq!(none.reason(), csv_reasons::NO_TARGET_NAMESPACES);
    let mixed =
        TargetNamespaces::from_operator_group(&[String::new(), "team-a".to_owned()]).unwrap_err();
    assert_eq!(mixed, InstallModeError::AllNamespacesAmongOthers);
    assert_eq!(mixed.reason(), csv_reasons::UNSUPPORTED_OPERATOR_GROUP);
    assert_eq!(
        TargetNamespaces::namespaces(["team-a", ""]).unwrap_err(),
        InstallModeError::AllNamespacesAmongOthers
    );
}

#[test]
fn install_modes_the_csv_does_not_support_are_refused() {
    // tiny supports OwnNamespace and AllNamespaces only.
    let csv = load(&fixture("minimal")).csv;
    assert_eq!(
        check_install_mode(&csv, "ops", &targets(&["ops"])).unwrap(),
        InstallModeType::OwnNamespace
    );
    assert_eq!(
        check_install_mode(&csv, "ops", &TargetNamespaces::All).unwrap(),
        InstallModeType::AllNamespaces
    );
    let error = check_install_mode(&csv, "ops", &targets(&["team-a"])).unwrap_err();
    assert_eq!(error.reason(), csv_reasons::UNSUPPORTED_OPERATOR_GROUP);
    assert_eq!(
        error.to_string(),
        "ClusterServiceVersion tiny-operator.v0.1.0 does not support install mode \
         SingleNamespace, needed to watch namespaces [team-a] from namespace ops"
    );
    assert!(check_install_mode(&csv, "ops", &targets(&["a", "b"])).is_err());
}

#[test]
fn multi_namespace_targets_including_the_own_namespace_also_need_own_namespace() {
    let mut csv = load(&fixture("minimal")).csv;
    for mode in csv.spec.install_modes.iter_mut().flatten() {
        mode.supported = mode.type_ == InstallModeType::MultiNamespace;
    }
    assert_eq!(
        check_install_mode(&csv, "ops", &targets(&["a", "b"])).unwrap(),
        InstallModeType::MultiNamespace
    );
    let error = check_install_mode(&csv, "ops", &targets(&["ops", "b"])).unwrap_err();
    assert!(
        matches!(
            error,
            InstallModeError::Unsupported {
                mode: InstallModeType::OwnNamespace,
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn service_accounts_used_include_default_but_default_is_never_created() {
    let accounts = service_accounts(&load(&widget("1.2.0")));
    assert_eq!(
        accounts.used.iter().collect::<Vec<_>>(),
        ["default", "widget-auditor", "widget-controller"],
        "permission accounts and the dashboard's pod account (default)"
    );
    assert_eq!(
        accounts.to_create.iter().collect::<Vec<_>>(),
        ["widget-auditor", "widget-controller"]
    );

    let accounts = service_accounts(&load(&fixture("gizmo")));
    assert_eq!(
        accounts.used.iter().collect::<Vec<_>>(),
        ["default", "gizmo", "gizmo-auditor"],
        "manifest accounts (gizmo, default) count too"
    );
    assert_eq!(
        accounts.to_create.iter().collect::<Vec<_>>(),
        ["gizmo", "gizmo-auditor"]
    );
}

#[test]
fn images_are_containers_init_containers_and_related_images() {
    assert_eq!(
        images(&load(&widget("1.2.0")))
            .into_iter()
            .collect::<Vec<_>>(),
        ["localhost:5000/opcat-examples/widget-operator:v1.2.0"]
    );
    assert_eq!(
        images(&load(&fixture("gizmo")))
            .into_iter()
            .collect::<Vec<_>>(),
        [
            "registry.example.com/gizmo/migrate:v1.0.0",
            "registry.example.com/gizmo/operand@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "registry.example.com/gizmo/operator:v1.0.0",
            "registry.example.com/gizmo/sidecar:v1.0.0",
        ]
    );
}
