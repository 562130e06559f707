//! The acts the demo narrates once opcat runs: what the install created, a pull-secret rotation
//! and the uninstall. Every claim is checked against the cluster.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::ResourceExt;
use test_registry::{Distribution, User};

use crate::cluster::{Cluster, Olm, wait_for};
use crate::examples::{self, Manifest};
use crate::inventory;
use crate::narrate::{self, Narrator, condition, text};

use super::{CATALOG, CRD, DemoError, FOREIGN_ENTRY, NAMESPACE, PULL_SECRET, SUBSCRIPTION, check};

/// Waits for the install and prints what opcat did; returns the installed CSV's name.
pub(super) async fn show_install(
    say: &mut Narrator<'_>,
    cluster: &Cluster,
    timeout: Duration,
) -> Result<String, DemoError> {
    say.step("What opcat did");
    let started = Instant::now();
    let catalog = cluster
        .wait_olm(
            (Olm::CatalogSource, CATALOG.0, CATALOG.1),
            "the CatalogSource to be READY",
            timeout,
            |c| text(c, "/status/connectionState/lastObservedState") == "READY",
        )
        .await?;
    say.detail(&format!(
        "CatalogSource {}/{}: {}   (after {:.1}s)",
        CATALOG.0,
        CATALOG.1,
        narrate::catalog_source(&catalog),
        started.elapsed().as_secs_f64()
    ));
    say.sub(&format!(
        "pulled with the credentials of Secret {}/{PULL_SECRET}",
        CATALOG.0
    ));

    let subscription = cluster
        .wait_olm(
            (Olm::Subscription, NAMESPACE, SUBSCRIPTION),
            "the Subscription to be AtLatestKnown with PullCredentialsReady",
            timeout,
            |s| {
                text(s, "/status/state") == "AtLatestKnown"
                    && condition(s, "PullCredentialsReady").is_some()
            },
        )
        .await?;
    let csv_name = text(&subscription, "/status/installedCSV").to_owned();
    let csv = cluster
        .wait_olm(
            (Olm::ClusterServiceVersion, NAMESPACE, &csv_name),
            "the CSV to succeed",
            timeout,
            |c| text(c, "/status/phase") == "Succeeded",
        )
        .await?;
    say.detail(&format!(
        "Subscription {NAMESPACE}/{SUBSCRIPTION}: state {}, installedCSV {csv_name}   (after {:.1}s)",
        text(&subscription, "/status/state"),
        started.elapsed().as_secs_f64()
    ));
    let (status, reason, message) =
        condition(&subscription, "PullCredentialsReady").unwrap_or_default();
    say.sub(&format!(
        "PullCredentialsReady={status} ({reason}): {message}"
    ));
    check(status == "True", "PullCredentialsReady is True", || {
        format!("{status} {reason}: {message}")
    })?;
    let plan = text(&subscription, "/status/installPlanRef/name").to_owned();
    if let Some(plan) = cluster.olm(Olm::InstallPlan, NAMESPACE, &plan).await? {
        say.detail(&format!(
            "InstallPlan {NAMESPACE}/{}: {} ({} approval)",
            text(&plan, "/metadata/name"),
            text(&plan, "/status/phase"),
            text(&plan, "/spec/approval")
        ));
    }
    say.detail(&format!(
        "ClusterServiceVersion {NAMESPACE}/{csv_name}: {} ({})",
        text(&csv, "/status/phase"),
        text(&csv, "/status/message")
    ));

    let copies: Vec<Secret> = cluster
        .list(Some(NAMESPACE), "opcat.dev/managed=true")
        .await?;
    check(
        copies.len() == 1,
        "one copy of the pull secret in widgets",
        || {
            format!(
                "{:?}",
                copies.iter().map(|c| c.name_any()).collect::<Vec<_>>()
            )
        },
    )?;
    let copy = copies[0].name_any();
    say.detail("The pull secret, copied into the install namespace:");
    for line in narrate::copy(&copies[0]) {
        say.sub(&line);
    }

    say.detail("Deployments (their pod templates list the copy too: the ServiceAccount admission");
    say.detail("plugin adds ServiceAccount secrets only to pods that list none of their own):");
    let deployments: Vec<Deployment> = cluster.list(Some(NAMESPACE), "").await?;
    for deployment in &deployments {
        for line in narrate::deployment(deployment) {
            say.sub(&line);
        }
        let listed = deployment
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|p| p.image_pull_secrets.as_ref())
            .is_some_and(|list| list.iter().any(|e| e.name == copy));
        check(
            listed,
            &format!("Deployment {} lists the copy", deployment.name_any()),
            || format!("{:?}", narrate::deployment(deployment)),
        )?;
    }

    say.detail("ServiceAccounts (every one the bundle uses, including default):");
    let accounts: Vec<ServiceAccount> = cluster.list(Some(NAMESPACE), "").await?;
    for account in &accounts {
        say.sub(&narrate::service_account(account));
        let names = narrate::pull_secret_names(account);
        check(
            names.contains(&copy),
            &format!("ServiceAccount {} lists the copy", account.name_any()),
            || format!("{names:?}"),
        )?;
    }
    let default = accounts.iter().find(|a| a.name_any() == "default");
    let default_names = default.map(narrate::pull_secret_names).unwrap_or_default();
    check(
        default_names.first().map(String::as_str) == Some(FOREIGN_ENTRY),
        "the user's entry on default is kept first",
        || format!("{default_names:?}"),
    )?;
    Ok(csv_name)
}

/// Re-applies the pull Secret with the other user's credentials and times the copy's update.
pub(super) async fn rotate(
    say: &mut Narrator<'_>,
    cluster: &Cluster,
    manifests: &[Manifest],
    registry: &Distribution,
    next_user: &User,
    timeout: Duration,
) -> Result<Duration, DemoError> {
    say.step("The admin rotates the pull secret");
    let copies: Vec<Secret> = cluster
        .list(Some(NAMESPACE), "opcat.dev/managed=true")
        .await?;
    let before = copies.into_iter().next().ok_or_else(|| DemoError::Claim {
        claim: "a copy exists before the rotation".to_owned(),
        seen: "none".to_owned(),
    })?;
    let copy = before.name_any();
    let rotated =
        test_registry::dockerconfigjson(&registry.host, &next_user.username, &next_user.password);
    let mut secret = examples::from_files(manifests, &["pull-secret.yaml"]).remove(0);
    examples::set_dockerconfigjson(&mut secret, &rotated);
    let started = Instant::now();
    examples::apply(&cluster.client, &secret).await?;
    say.detail(&format!(
        "applied Secret {}/{PULL_SECRET} with demo-rotated's credentials",
        CATALOG.0
    ));
    let after = wait_for("the copy to carry the rotated data", timeout, || async {
        let found = cluster.get::<Secret>(NAMESPACE, &copy).await?;
        Ok(match found {
            Some(s) if data_is(&s, &rotated) => Ok(s),
            Some(s) => Err(format!(
                "copy at resourceVersion {:?}",
                s.metadata.resource_version
            )),
            None => Err("copy absent".to_owned()),
        })
    })
    .await?;
    let took = started.elapsed();
    say.detail(&format!(
        "copy {NAMESPACE}/{copy} updated in place after {:.2}s: uid {} (unchanged), \
         resourceVersion {} -> {}",
        took.as_secs_f64(),
        after.uid().unwrap_or_default(),
        before.resource_version().unwrap_or_default(),
        after.resource_version().unwrap_or_default()
    ));
    say.sub("its data now equals the rotated source (compared here, never printed)");
    check(
        after.uid() == before.uid(),
        "the copy keeps its uid",
        || format!("{:?} -> {:?}", before.uid(), after.uid()),
    )?;
    Ok(took)
}

fn data_is(secret: &Secret, dockerconfigjson: &str) -> bool {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(".dockerconfigjson"))
        .is_some_and(|value| value.0 == dockerconfigjson.as_bytes())
}

/// Deletes the Subscription, then the CSV, and shows what is left.
pub(super) async fn uninstall(
    say: &mut Narrator<'_>,
    cluster: &Cluster,
    csv: &str,
    timeout: Duration,
) -> Result<(), DemoError> {
    say.step("Uninstall: delete the Subscription, then the CSV (as in OLM)");
    let before = inventory::marked_by_opcat(cluster).await?;
    let started = Instant::now();
    cluster
        .olm_delete(Olm::Subscription, NAMESPACE, SUBSCRIPTION)
        .await?;
    cluster
        .olm_delete(Olm::ClusterServiceVersion, NAMESPACE, csv)
        .await?;
    let expected = kept_on_uninstall(&before);
    let left = wait_for("only the CRD and the roles to be left", timeout, || async {
        let now = inventory::marked_by_opcat(cluster).await?;
        Ok(if now == expected {
            Ok(now)
        } else {
            Err(format!("{now:?}"))
        })
    })
    .await?;
    say.detail(&format!(
        "done after {:.1}s; removed by opcat's finalizer (or, for objects it owns, the garbage collector):",
        started.elapsed().as_secs_f64()
    ));
    // The namespace's `default` ServiceAccount is not opcat's: it loses only opcat's entry and
    // annotation (shown below), it is not removed.
    let default_account = format!("ServiceAccount {NAMESPACE}/default");
    let gone: BTreeSet<String> = before
        .difference(&left)
        .filter(|entry| **entry != default_account)
        .cloned()
        .collect();
    for line in inventory::by_kind(&gone) {
        say.sub(&line);
    }
    say.detail(&format!(
        "left: {CRD} (CRDs are never deleted: that would delete every Widget)"
    ));
    let roles: BTreeSet<String> = left.iter().filter(|e| **e != CRD).cloned().collect();
    for line in inventory::by_kind(&roles) {
        say.sub(&line);
    }
    say.sub(
        "the Widget API's admin/edit/view/crdview roles go with the CRD, the OperatorGroup's \
         aggregated roles with the OperatorGroup (as in OLM)",
    );
    let default = cluster.get::<ServiceAccount>(NAMESPACE, "default").await?;
    let names = default
        .as_ref()
        .map(narrate::pull_secret_names)
        .unwrap_or_default();
    say.detail(&format!(
        "ServiceAccount {NAMESPACE}/default (not opcat's, kept): imagePullSecrets [{}]: opcat's \
         entry removed, the user's entry survived",
        names.join(", ")
    ));
    check(
        names == [FOREIGN_ENTRY],
        "only the user's entry is left on default",
        || format!("{names:?}"),
    )?;
    let source = cluster.get::<Secret>(CATALOG.0, PULL_SECRET).await?;
    check(source.is_some(), "the source Secret is untouched", || {
        "deleted".to_owned()
    })?;
    Ok(())
}

/// What uninstall keeps, as OLM does: the CRD (never deleted), the ClusterRoles of the API it
/// serves (`<crd>-<version>-{admin,edit,view,crdview}`, owned by the CRD, so they go with it),
/// and the OperatorGroup's `olm.og.<group>.*` roles (they go with the OperatorGroup, which
/// `deploy/examples/operator-group.yaml` names after its namespace).
fn kept_on_uninstall(before: &BTreeSet<String>) -> BTreeSet<String> {
    let crd_name = CRD.rsplit(' ').next().unwrap_or_default();
    let api_roles = format!("ClusterRole {crd_name}-");
    let group_roles = format!("ClusterRole olm.og.{NAMESPACE}.");
    before
        .iter()
        .filter(|entry| {
            entry.as_str() == CRD
                || entry.starts_with(&api_roles)
                || entry.starts_with(&group_roles)
        })
        .cloned()
        .collect()
}
