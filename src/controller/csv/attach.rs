//! Apply, step 2 of a converge: the ServiceAccounts opcat creates, then the `imagePullSecrets`
//! edits, both the plan's (the catalog's copies) and the names the bundle's ServiceAccount
//! manifests list, each written under its precondition. Touches the client.

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::error::CsvError;
use super::observe;
use super::propagation::PropagationInputs;
use super::{Csvs, service_accounts};
use crate::bundle::RenderedBundle;
use crate::pull_secrets::{NamespacePlan, ServiceAccountEdit, service_account};

/// Step 2: applies the ServiceAccounts opcat creates, reads them back when that changed them,
/// and writes the `imagePullSecrets` edits the plan wants, each under its precondition.
/// Returns the edits written.
pub(super) async fn attach(
    state: &Csvs,
    namespace: &str,
    inputs: &mut PropagationInputs,
    plan: &NamespacePlan,
    rendered: &RenderedBundle,
    now: &Time,
) -> Result<Vec<ServiceAccountEdit>, CsvError> {
    let client = &state.context.client;
    let policy = &state.restore_policy;
    let created = service_accounts::apply_created(
        client,
        &rendered.service_accounts,
        &inputs.service_accounts,
    )
    .await?;
    if !created.is_empty() || !plan.missing_service_accounts.is_empty() {
        inputs.service_accounts = observe::after_create(
            client,
            namespace,
            &inputs.used_service_accounts(),
            created,
            &inputs.service_accounts,
        )
        .await?;
    }
    let mut written = Vec::new();
    for edit in inputs.plan(namespace, now.0, policy).service_account_edits {
        let recompute = |fresh: &ServiceAccount| {
            let mut one = inputs.clone();
            one.service_accounts = vec![fresh.clone()];
            one.plan(namespace, now.0, policy)
                .service_account_edits
                .into_iter()
                .next()
        };
        let outcome = service_accounts::write_edit(client, namespace, edit, recompute).await?;
        written.extend(outcome.written);
    }
    Ok(written)
}

/// Attaches the names the bundle's ServiceAccount manifests list, the same careful way.
pub(super) async fn attach_bundle_pull_secrets(
    state: &Csvs,
    namespace: &str,
    rendered: &RenderedBundle,
    now: &Time,
) -> Result<(), CsvError> {
    let client = &state.context.client;
    let policy = &state.restore_policy;
    for (sa_name, names) in &rendered.bundle_pull_secrets {
        let Some(sa) = observe::service_account(client, namespace, sa_name).await? else {
            continue;
        };
        let recompute =
            |fresh: &ServiceAccount| service_account::attach(fresh, names, now.0, policy);
        if let Some(edit) = recompute(&sa) {
            service_accounts::write_edit(client, namespace, edit, recompute).await?;
        }
    }
    Ok(())
}
