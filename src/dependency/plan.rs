//! A solution as an [`Outcome`]: which chosen bundles are new, who needs them, in which order
//! to install them.

use std::collections::{BTreeMap, BTreeSet};

use resolvo::{Requirement, SolvableId};

use super::provider::{Kind, Provider};
use super::{Outcome, Plan, PlannedBundle, SolveError};
use crate::resolve::BundleRef;

pub(super) fn outcome(
    provider: &Provider<'_>,
    chosen: &[SolvableId],
) -> Result<Outcome, SolveError> {
    let world = &provider.world;
    let sub = &world.subscription;
    let chosen: BTreeSet<SolvableId> = chosen
        .iter()
        .copied()
        .filter(|&id| !matches!(provider.solvable(id).kind, Kind::Marker(_)))
        .collect();
    let own = chosen
        .iter()
        .copied()
        .find(|&id| provider.package_of(&provider.solvable(id)) == sub.package);
    let is_new = |id: SolvableId| matches!(provider.solvable(id).kind, Kind::Bundle(_));

    // Who needs each new bundle: a breadth-first walk from the Subscription's choice and the
    // installed operators, each requirement met by its most preferred chosen candidate.
    let mut roots: Vec<SolvableId> = own.into_iter().collect();
    roots.extend(
        provider
            .installed
            .iter()
            .filter(|id| chosen.contains(id) && Some(**id) != own),
    );
    let mut required_by: BTreeMap<SolvableId, (String, String)> = BTreeMap::new();
    let mut children: BTreeMap<SolvableId, Vec<SolvableId>> = BTreeMap::new();
    let mut seen: BTreeSet<SolvableId> = roots.iter().copied().collect();
    let mut queue: std::collections::VecDeque<SolvableId> = roots.iter().copied().collect();
    while let Some(id) = queue.pop_front() {
        let solvable = provider.solvable(id);
        let (declared, preferred) = provider.declared(&solvable)?;
        for dependency in &declared {
            let Ok(Some(requirement)) = provider.requirement(id, dependency, preferred) else {
                continue;
            };
            let Some(met) = candidates(provider, requirement)
                .into_iter()
                .find(|c| chosen.contains(c))
            else {
                continue;
            };
            children.entry(id).or_default().push(met);
            if seen.insert(met) {
                required_by.insert(
                    met,
                    (
                        provider.csv_of(&solvable),
                        format!("requires {}", dependency.constraint),
                    ),
                );
                queue.push_back(met);
            }
        }
    }

    // Install order: dependencies first (post-order), the Subscription's bundle last.
    let mut order = Vec::new();
    let mut visited = BTreeSet::new();
    let mut starts: Vec<SolvableId> = roots.iter().rev().copied().collect();
    starts.extend(chosen.iter().copied().filter(|id| !seen.contains(id)));
    for start in starts {
        post_order(start, &children, &mut visited, &mut order);
    }
    let mut bundles: Vec<PlannedBundle> = order
        .into_iter()
        .filter(|&id| is_new(id) && Some(id) != own)
        .filter_map(|id| planned(provider, id, required_by.get(&id).cloned()))
        .collect();
    if let Some(own) = own.filter(|&id| is_new(id)) {
        bundles.extend(planned(provider, own, None));
    }

    match (bundles.is_empty(), own.map(|id| provider.solvable(id))) {
        (true, Some(own)) if matches!(own.kind, Kind::Installed(_)) => Ok(Outcome::AtLatest {
            installed: provider.csv_of(&own),
            channel: sub.candidates.channel.name.clone(),
        }),
        _ => Ok(Outcome::Install(Plan { bundles })),
    }
}

/// The candidates of a requirement, best first.
pub(super) fn candidates(provider: &Provider<'_>, requirement: Requirement) -> Vec<SolvableId> {
    match requirement {
        Requirement::Single(set) => provider.matching(set),
        Requirement::Union(union) => {
            use resolvo::Interner;
            provider
                .version_sets_in_union(union)
                .flat_map(|set| provider.matching(set))
                .collect()
        }
    }
}

fn post_order(
    id: SolvableId,
    children: &BTreeMap<SolvableId, Vec<SolvableId>>,
    visited: &mut BTreeSet<SolvableId>,
    order: &mut Vec<SolvableId>,
) {
    if !visited.insert(id) {
        return;
    }
    for &child in children.get(&id).into_iter().flatten() {
        post_order(child, children, visited, order);
    }
    order.push(id);
}

fn planned(
    provider: &Provider<'_>,
    id: SolvableId,
    required_by: Option<(String, String)>,
) -> Option<PlannedBundle> {
    let solvable = provider.solvable(id);
    let Kind::Bundle(offer) = &solvable.kind else {
        return None;
    };
    let world = &provider.world;
    let sub = &world.subscription;
    let replaces = (offer.bundle.package == sub.package)
        .then(|| sub.installed.map(|i| world.installed[i].csv.clone()))
        .flatten();
    Some(PlannedBundle {
        bundle: BundleRef {
            package: offer.bundle.package.clone(),
            channel: offer.channel.to_owned(),
            name: offer.bundle.name.clone(),
            version: offer.bundle.version.clone(),
            image: offer.bundle.image.clone(),
            replaces,
        },
        catalog: world.catalogs[offer.rank].id.clone(),
        required_by,
    })
}
