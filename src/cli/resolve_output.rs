//! What `opcat resolve` prints: the Subscription's bundle as `key: value` lines (as before
//! dependencies existed) followed by the dependency tree, or one JSON object.

use serde::Serialize;

use crate::dependency::{Outcome, PlannedBundle, Problem};

/// Output format of `opcat resolve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ResolveOutput {
    /// `key: value` lines for the Subscription's bundle, then the dependency tree; or a
    /// sentence when already at the latest version.
    #[default]
    Text,
    /// One JSON object with `result` = `install` or `at-latest`, and `dependencies` in install
    /// order.
    Json,
}

#[derive(Serialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
enum ResolutionJson<'a> {
    Install {
        package: &'a str,
        channel: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        bundle: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        version: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        image: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        replaces: Option<&'a str>,
        catalog: String,
        dependencies: Vec<DependencyJson<'a>>,
    },
    AtLatest {
        package: &'a str,
        channel: &'a str,
        installed: &'a str,
    },
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DependencyJson<'a> {
    package: &'a str,
    channel: &'a str,
    bundle: &'a str,
    version: String,
    image: &'a str,
    catalog: String,
    required_by: Option<RequiredByJson<'a>>,
}

#[derive(Serialize)]
struct RequiredByJson<'a> {
    bundle: &'a str,
    requirement: &'a str,
}

/// The text or JSON for a resolution.
pub fn render(
    outcome: &Outcome,
    problem: &Problem<'_>,
    output: ResolveOutput,
) -> Result<String, serde_json::Error> {
    let sub = &problem.subscription;
    let (own, dependencies): (Vec<&PlannedBundle>, Vec<&PlannedBundle>) = match outcome {
        Outcome::Install(plan) => plan
            .bundles
            .iter()
            .partition(|b| b.required_by.is_none() && b.bundle.package == sub.package),
        Outcome::AtLatest { .. } => (Vec::new(), Vec::new()),
    };
    let own = own.first().copied();
    if output == ResolveOutput::Json {
        let json = match outcome {
            Outcome::AtLatest { installed, channel } => ResolutionJson::AtLatest {
                package: &sub.package,
                channel,
                installed,
            },
            Outcome::Install(_) => ResolutionJson::Install {
                package: &sub.package,
                channel: own.map_or("", |b| b.bundle.channel.as_str()),
                bundle: own.map(|b| b.bundle.name.as_str()),
                version: own.map(|b| b.bundle.version.to_string()),
                image: own.map(|b| b.bundle.image.as_str()),
                replaces: own.and_then(|b| b.bundle.replaces.as_deref()),
                catalog: sub.catalog.to_string(),
                dependencies: dependencies.iter().map(|b| dependency_json(b)).collect(),
            },
        };
        let mut text = serde_json::to_string_pretty(&json)?;
        text.push('\n');
        return Ok(text);
    }
    let mut text = String::new();
    match (outcome, own) {
        (Outcome::AtLatest { installed, channel }, _) => text.push_str(&format!(
            "{installed} is already at the latest version in channel {channel} of package {}\n",
            sub.package
        )),
        (_, Some(own)) => {
            let b = &own.bundle;
            text.push_str(&format!(
                "bundle:   {}\nversion:  {}\nimage:    {}\nchannel:  {}\npackage:  {}\n",
                b.name, b.version, b.image, b.channel, b.package
            ));
            if let Some(replaces) = &b.replaces {
                text.push_str(&format!("replaces: {replaces}\n"));
            }
        }
        (_, None) => text.push_str(&format!(
            "{} stays on its installed CSV; its dependencies need:\n",
            sub.package
        )),
    }
    if !dependencies.is_empty() {
        text.push_str(&tree(own, &dependencies));
    }
    Ok(text)
}

fn dependency_json<'a>(b: &'a PlannedBundle) -> DependencyJson<'a> {
    DependencyJson {
        package: &b.bundle.package,
        channel: &b.bundle.channel,
        bundle: &b.bundle.name,
        version: b.bundle.version.to_string(),
        image: &b.bundle.image,
        catalog: b.catalog.to_string(),
        required_by: b
            .required_by
            .as_ref()
            .map(|(bundle, requirement)| RequiredByJson {
                bundle,
                requirement,
            }),
    }
}

/// ```text
/// dependencies:
/// app.v1.0.0
/// └── requires package db >=1.0.0: db.v1.0.0 (1.0.0, channel stable, catalog team-a/ops)
///     └── requires package storage >=1.0.0: storage.v1.0.0 (...)
/// install order: storage.v1.0.0, db.v1.0.0, app.v1.0.0
/// ```
fn tree(own: Option<&PlannedBundle>, dependencies: &[&PlannedBundle]) -> String {
    let mut text = String::from("dependencies:\n");
    let requirer = |b: &PlannedBundle| b.required_by.as_ref().map(|(by, _)| by.clone());
    // Roots: the Subscription's bundle, then requirers outside the plan (installed operators).
    let mut roots: Vec<String> = own.map(|b| b.bundle.name.clone()).into_iter().collect();
    for b in dependencies {
        if let Some(by) = requirer(b)
            && !roots.contains(&by)
            && !dependencies.iter().any(|d| d.bundle.name == by)
        {
            roots.push(by);
        }
    }
    for root in &roots {
        text.push_str(root);
        text.push('\n');
        branch(root, dependencies, "", &mut text);
    }
    let order: Vec<&str> = dependencies
        .iter()
        .map(|b| b.bundle.name.as_str())
        .chain(own.map(|b| b.bundle.name.as_str()))
        .collect();
    text.push_str(&format!("install order: {}\n", order.join(", ")));
    text
}

fn branch(parent: &str, dependencies: &[&PlannedBundle], indent: &str, text: &mut String) {
    let children: Vec<&&PlannedBundle> = dependencies
        .iter()
        .filter(|b| b.required_by.as_ref().is_some_and(|(by, _)| by == parent))
        .collect();
    for (i, child) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        let b = &child.bundle;
        let requirement = child.required_by.as_ref().map_or("", |(_, r)| r.as_str());
        text.push_str(&format!(
            "{indent}{} {requirement}: {} ({}, channel {}, catalog {})\n",
            if last { "└──" } else { "├──" },
            b.name,
            b.version,
            b.channel,
            child.catalog
        ));
        let deeper = format!("{indent}{}", if last { "    " } else { "│   " });
        branch(&b.name, dependencies, &deeper, text);
    }
}
