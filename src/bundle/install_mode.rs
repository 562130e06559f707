//! The namespaces an operator watches, and whether its ClusterServiceVersion supports them.
//!
//! OLM's mapping from an OperatorGroup's resolved namespaces (`status.namespaces`) to an install
//! mode (`operator-framework/api: InstallModeSet.Supports`): `[""]` is AllNamespaces, the
//! operator's own namespace alone is OwnNamespace, one other namespace is SingleNamespace,
//! several are MultiNamespace (which also needs OwnNamespace when the own namespace is among
//! them).

use std::collections::BTreeSet;
use std::fmt;

use crate::api::ClusterServiceVersion;
use crate::api::cluster_service_version::{InstallModeType, WebhookAdmissionType};
use crate::api::csv_reasons;

/// The namespaces an operator watches: all of them, or a non-empty set without `""`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetNamespaces {
    /// Every namespace (OperatorGroup `status.namespaces: [""]`).
    All,
    /// These namespaces (sorted, never empty, never `""`).
    Namespaces(BTreeSet<String>),
}

impl TargetNamespaces {
    /// The targets of an OperatorGroup's resolved `status.namespaces`.
    pub fn from_operator_group(namespaces: &[String]) -> Result<Self, InstallModeError> {
        match namespaces {
            [] => Err(InstallModeError::NoTargetNamespaces),
            [only] if only.is_empty() => Ok(Self::All),
            _ if namespaces.iter().any(String::is_empty) => {
                Err(InstallModeError::AllNamespacesAmongOthers)
            }
            _ => Ok(Self::Namespaces(namespaces.iter().cloned().collect())),
        }
    }

    /// The given namespaces (an empty list is an error, like an OperatorGroup that selects none).
    pub fn namespaces<I, S>(namespaces: I) -> Result<Self, InstallModeError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let namespaces: Vec<String> = namespaces.into_iter().map(Into::into).collect();
        if namespaces.iter().any(String::is_empty) {
            return Err(InstallModeError::AllNamespacesAmongOthers);
        }
        Self::from_operator_group(&namespaces)
    }

    /// Whether every namespace is targeted.
    pub fn is_all(&self) -> bool {
        matches!(self, Self::All)
    }

    /// The listed namespaces, sorted (none for [`TargetNamespaces::All`]).
    pub fn listed(&self) -> impl Iterator<Item = &str> {
        match self {
            Self::All => None,
            Self::Namespaces(namespaces) => Some(namespaces.iter().map(String::as_str)),
        }
        .into_iter()
        .flatten()
    }

    /// Value of the `olm.targetNamespaces` annotation: the namespaces comma-separated, `""` for
    /// all namespaces.
    pub fn annotation_value(&self) -> String {
        self.listed().collect::<Vec<_>>().join(",")
    }
}

impl fmt::Display for TargetNamespaces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => f.write_str("all namespaces"),
            Self::Namespaces(_) => write!(f, "namespaces [{}]", self.annotation_value()),
        }
    }
}

/// Why an operator cannot be installed for an OperatorGroup's targets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstallModeError {
    /// The OperatorGroup selects no namespace.
    #[error("the OperatorGroup selects no namespace; an operator must watch at least one")]
    NoTargetNamespaces,
    /// `""` (all namespaces) listed together with other namespaces.
    #[error("the OperatorGroup lists all namespaces (\"\") together with other namespaces")]
    AllNamespacesAmongOthers,
    /// The CSV does not support the install mode the targets need.
    #[error(
        "ClusterServiceVersion {csv} does not support install mode {mode:?}, needed to watch {targets} from namespace {install_namespace}"
    )]
    Unsupported {
        /// Name of the ClusterServiceVersion.
        csv: String,
        /// The install mode that is not supported.
        mode: InstallModeType,
        /// The targets.
        targets: TargetNamespaces,
        /// The operator's namespace.
        install_namespace: String,
    },
    /// Conversion webhooks on an install that does not watch all namespaces (OLM's rule: a CRD
    /// is cluster-wide, so only an operator serving every namespace may convert it).
    #[error(
        "ClusterServiceVersion {csv} has conversion webhooks ({webhooks}), which need an \
         AllNamespaces install (OperatorGroup without targetNamespaces), not {targets}"
    )]
    ConversionNeedsAllNamespaces {
        /// Name of the ClusterServiceVersion.
        csv: String,
        /// `generateName` of each conversion webhook.
        webhooks: String,
        /// The targets.
        targets: TargetNamespaces,
    },
}

impl InstallModeError {
    /// The ClusterServiceVersion `status.reason` OLM uses for this error.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NoTargetNamespaces => csv_reasons::NO_TARGET_NAMESPACES,
            Self::AllNamespacesAmongOthers
            | Self::Unsupported { .. }
            | Self::ConversionNeedsAllNamespaces { .. } => csv_reasons::UNSUPPORTED_OPERATOR_GROUP,
        }
    }

    /// A short CamelCase name of the error, for metric labels.
    pub fn kind(&self) -> &'static str {
        self.reason()
    }
}

/// The install mode an operator in `install_namespace` watching `targets` runs in.
pub fn install_mode_for(install_namespace: &str, targets: &TargetNamespaces) -> InstallModeType {
    match targets {
        TargetNamespaces::All => InstallModeType::AllNamespaces,
        TargetNamespaces::Namespaces(namespaces) if namespaces.len() > 1 => {
            InstallModeType::MultiNamespace
        }
        TargetNamespaces::Namespaces(namespaces) if namespaces.contains(install_namespace) => {
            InstallModeType::OwnNamespace
        }
        TargetNamespaces::Namespaces(_) => InstallModeType::SingleNamespace,
    }
}

/// The install mode for `targets`, if `csv` supports it. MultiNamespace targets that include
/// the install namespace also need OwnNamespace, as in OLM; conversion webhooks need
/// AllNamespaces.
pub fn check_install_mode(
    csv: &ClusterServiceVersion,
    install_namespace: &str,
    targets: &TargetNamespaces,
) -> Result<InstallModeType, InstallModeError> {
    let mode = install_mode_for(install_namespace, targets);
    let mut needed = vec![mode];
    if mode == InstallModeType::MultiNamespace && targets.listed().any(|ns| ns == install_namespace)
    {
        needed.push(InstallModeType::OwnNamespace);
    }
    if let Some(missing) = needed
        .into_iter()
        .find(|mode| !csv.spec.supports_install_mode(*mode))
    {
        return Err(InstallModeError::Unsupported {
            csv: csv.metadata.name.clone().unwrap_or_default(),
            mode: missing,
            targets: targets.clone(),
            install_namespace: install_namespace.to_owned(),
        });
    }
    let conversions: Vec<&str> = super::serving::webhooks(csv)
        .iter()
        .filter(|webhook| webhook.type_ == WebhookAdmissionType::ConversionWebhook)
        .map(|webhook| webhook.generate_name.as_str())
        .collect();
    if !conversions.is_empty() && mode != InstallModeType::AllNamespaces {
        return Err(InstallModeError::ConversionNeedsAllNamespaces {
            csv: csv.metadata.name.clone().unwrap_or_default(),
            webhooks: conversions.join(", "),
            targets: targets.clone(),
        });
    }
    Ok(mode)
}
