//! Pure: what each bundle image declares it needs (`metadata/dependencies.yaml`) must be met by
//! the plan's own CSVs or by the operators already installed in the namespace (no client).
//!
//! The catalog's properties were resolved before the plan was made; a bundle image may declare
//! more than its catalog entry says (a catalog built by hand, or from an older render). OLM
//! would have resolved those too; opcat refuses to install an operator whose declared needs
//! nothing provides, and says which.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::ResourceExt;

use crate::api::ClusterServiceVersion;
use crate::bundle::Bundle;
use crate::controller::installed_operators::{installed_operator, installed_operators, is_met};
use crate::dependency::{InstalledOperator, metadata_dependencies};

/// Why the plan cannot be installed as it is, if it cannot: one sentence per unmet or
/// malformed declaration, each naming the bundle and what it requires.
///
/// `bundles` are the plan's bundles with the CSVs built from them, in plan order; `installed`
/// the CSVs of the namespace.
pub fn unmet(
    namespace: &str,
    bundles: &[(&Bundle, &ClusterServiceVersion)],
    installed: &BTreeMap<String, Arc<ClusterServiceVersion>>,
) -> Option<String> {
    let replaced: Vec<&str> = bundles
        .iter()
        .filter_map(|(_, csv)| csv.spec.replaces.as_deref())
        .collect();
    let mut operators: Vec<InstalledOperator> = installed_operators(installed)
        .into_iter()
        .filter(|operator| !replaced.contains(&operator.csv.as_str()))
        .collect();
    operators.extend(bundles.iter().map(|(_, csv)| installed_operator(csv)));

    let mut problems = Vec::new();
    for (bundle, csv) in bundles {
        let name = csv.name_any();
        let entries = bundle.dependencies();
        if entries.is_empty() {
            continue;
        }
        let dependencies = match metadata_dependencies(&name, &entries) {
            Ok(dependencies) => dependencies,
            Err(error) => {
                problems.push(format!("metadata/dependencies.yaml of {error}"));
                continue;
            }
        };
        for dependency in dependencies
            .iter()
            .filter(|dependency| !is_met(dependency, &operators))
        {
            let why = dependency
                .failure_message
                .as_deref()
                .map(|message| format!(" ({message})"))
                .unwrap_or_default();
            problems.push(format!(
                "bundle {name} declares in its metadata/dependencies.yaml that it requires {}{why}, \
                 but neither this InstallPlan nor an operator installed in namespace {namespace} \
                 provides it",
                dependency.constraint
            ));
        }
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

#[cfg(test)]
#[path = "declared_tests.rs"]
mod tests;
