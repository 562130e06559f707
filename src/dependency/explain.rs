//! Why no plan exists, in sentences a user can act on. resolvo's conflict graph (the
//! requirements and exclusions that together admit no solution) is rewritten into:
//!
//! - for a requirement nothing can meet: the chain that leads to it and what is missing
//!   ("a.v1 requires package b; b.v2 requires API x/v1 X; no catalog visible to namespace n
//!   provides it");
//! - for a package asked for twice in ways no single bundle meets: both requirers and both
//!   ranges, or the installed operator that is kept;
//! - for an API two chosen operators would both provide: both operators.
//!
//! One sentence per line, sorted, so the same problem always reads the same.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use resolvo::conflict::Conflict;
use resolvo::conflict::{ConflictCause, ConflictEdge, ConflictNode};
use resolvo::{Requirement, SolvableId, Solver};

use super::SolveError;
use super::gvk_text;
use super::plan::candidates;
use super::provider::{Kind, Provider, ReqKind};

type Graph = resolvo::conflict::ConflictGraph<SolvableId>;

pub(super) fn explain(solver: &Solver<Provider<'_>>, conflict: &Conflict) -> SolveError {
    let provider = solver.provider();
    let graph = conflict.graph(solver);
    let edges = graph.graph.raw_edges();
    for edge in edges {
        if let (ConflictEdge::Conflict(ConflictCause::Excluded), ConflictNode::Solvable(id)) =
            (edge.weight, graph.graph[edge.source()])
            && let Some(error) = provider.invalid.borrow().get(&id)
        {
            return SolveError::InvalidDependency(error.clone());
        }
    }
    let explainer = Explainer {
        provider,
        graph: &graph,
        parents: parents(&graph),
    };
    let mut lines: Vec<String> = explainer.unmet();
    let mut conflicts = explainer.clashes();
    conflicts.sort();
    lines.extend(conflicts);
    lines.dedup();
    if lines.is_empty() {
        lines.push(conflict.display_user_friendly(solver).to_string());
    }
    SolveError::Unsatisfiable {
        message: lines.join("\n"),
    }
}

struct Explainer<'a, 'p> {
    provider: &'a Provider<'p>,
    graph: &'a Graph,
    /// For each node, the edge that first reaches it from the root.
    parents: HashMap<usize, (usize, Requirement)>,
}

/// Breadth-first over requirement edges from the root: the shortest chain to every node.
fn parents(graph: &Graph) -> HashMap<usize, (usize, Requirement)> {
    let mut parents = HashMap::new();
    let mut queue = VecDeque::from([graph.root_node.index()]);
    let mut seen = BTreeSet::from([graph.root_node.index()]);
    while let Some(node) = queue.pop_front() {
        for edge in graph.graph.raw_edges() {
            if let ConflictEdge::Requires(requirement) = edge.weight
                && edge.source().index() == node
                && seen.insert(edge.target().index())
            {
                parents.insert(edge.target().index(), (node, requirement));
                queue.push_back(edge.target().index());
            }
        }
    }
    parents
}

impl Explainer<'_, '_> {
    fn node(&self, index: usize) -> ConflictNode<SolvableId> {
        self.graph.graph[petgraph::graph::NodeIndex::new(index)]
    }

    fn csv(&self, index: usize) -> Option<String> {
        match self.node(index) {
            ConflictNode::Solvable(id) => Some(self.provider.csv_of(&self.provider.solvable(id))),
            _ => None,
        }
    }

    /// "x requires package y >=1" for the requirement `requirement` of node `from`.
    fn requires(&self, from: usize, requirement: Requirement) -> Option<String> {
        let csv = self.csv(from)?;
        match self.provider.requirement_kind(requirement) {
            ReqKind::Dependency { text, .. } => Some(format!("{csv} requires {text}")),
            ReqKind::Api(gvk) => Some(format!("{csv} provides API {}", gvk_text(&gvk))),
            ReqKind::Subscription | ReqKind::Keep => None,
        }
    }

    /// The chain from the root to `index`: "a requires b; b requires c".
    fn chain(&self, index: usize) -> Vec<String> {
        let mut hops = Vec::new();
        let mut at = index;
        while let Some(&(parent, requirement)) = self.parents.get(&at) {
            hops.extend(self.requires(parent, requirement));
            at = parent;
        }
        hops.reverse();
        hops
    }

    /// Requirements without any candidate.
    fn unmet(&self) -> Vec<String> {
        let Some(unresolved) = self.graph.unresolved_node else {
            return Vec::new();
        };
        // Requirers of a requirement nothing meets, with every such requirement of theirs (the
        // conflict holds only the first one the solver met).
        let mut unmet: Vec<(usize, Requirement)> = Vec::new();
        for edge in self.graph.graph.raw_edges() {
            if let ConflictEdge::Requires(requirement) = edge.weight
                && edge.target() == unresolved
            {
                let from = edge.source().index();
                unmet.push((from, requirement));
                unmet.extend(self.other_unmet(from).into_iter().map(|r| (from, r)));
            }
        }
        // (chain before the requirer, requirer's package, what is missing) -> requirers
        let mut groups: BTreeMap<(Vec<String>, String, String), Vec<String>> = BTreeMap::new();
        for (from, requirement) in unmet {
            let (Some(csv), ConflictNode::Solvable(id)) = (self.csv(from), self.node(from)) else {
                continue;
            };
            let ReqKind::Dependency {
                text,
                failure,
                package,
            } = self.provider.requirement_kind(requirement)
            else {
                continue;
            };
            let mut missing = format!("{text}; {}", self.why_unmet(package.as_deref()));
            if let Some(failure) = failure {
                missing.push_str(&format!(" ({failure})"));
            }
            let prefix = self.chain(from);
            let package = self.provider.package_of(&self.provider.solvable(id));
            let requirers = groups.entry((prefix, package, missing)).or_default();
            if !requirers.contains(&csv) {
                requirers.push(csv);
            }
        }
        groups
            .into_iter()
            .map(|((mut prefix, _, missing), requirers)| {
                let verb = if requirers.len() == 1 {
                    "requires"
                } else {
                    "require"
                };
                prefix.push(format!("{} {verb} {missing}", and_list(&requirers)));
                prefix.join("; ")
            })
            .collect()
    }

    /// The requirements of node `from` that no candidate at all can meet.
    fn other_unmet(&self, from: usize) -> Vec<Requirement> {
        let ConflictNode::Solvable(id) = self.node(from) else {
            return Vec::new();
        };
        let solvable = self.provider.solvable(id);
        let Ok((declared, preferred)) = self.provider.declared(&solvable) else {
            return Vec::new();
        };
        declared
            .iter()
            .filter_map(|d| self.provider.requirement(id, d, preferred).ok().flatten())
            .filter(|&r| candidates(self.provider, r).is_empty())
            .collect()
    }

    fn why_unmet(&self, package: Option<&str>) -> String {
        let namespace = self.provider.world.namespace;
        let offered: BTreeSet<semver::Version> = package
            .map(|p| {
                let name = self.provider.name(p);
                self.provider
                    .candidates_of(name)
                    .iter()
                    .filter_map(|&id| self.provider.version_of(&self.provider.solvable(id)))
                    .collect()
            })
            .unwrap_or_default();
        match (package, offered.is_empty()) {
            (Some(package), false) => {
                let versions: Vec<String> = offered.iter().map(ToString::to_string).collect();
                format!(
                    "no version of {package} in that range is visible to namespace {namespace} \
                     (found {})",
                    versions.join(", ")
                )
            }
            _ => format!("no catalog visible to namespace {namespace} provides it"),
        }
    }

    /// Solvables of one name that cannot all be chosen, and what asked for each.
    fn clashes(&self) -> Vec<String> {
        let mut by_name: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
        for edge in self.graph.graph.raw_edges() {
            if edge.weight != ConflictEdge::Conflict(ConflictCause::ForbidMultipleInstances) {
                continue;
            }
            for node in [edge.source().index(), edge.target().index()] {
                if let ConflictNode::Solvable(id) = self.node(node) {
                    let name = self.provider.solvable(id).name;
                    by_name
                        .entry(self.provider.name_text(name))
                        .or_default()
                        .insert(node);
                }
            }
        }
        by_name
            .into_iter()
            .filter_map(|(name, nodes)| self.clash(&name, &nodes))
            .collect()
    }

    fn clash(&self, name: &str, nodes: &BTreeSet<usize>) -> Option<String> {
        let api = self.provider.api_of(self.provider.name(name));
        let mut parts: Vec<String> = Vec::new();
        let mut kept = false;
        for edge in self.graph.graph.raw_edges() {
            let ConflictEdge::Requires(requirement) = edge.weight else {
                continue;
            };
            if !nodes.contains(&edge.target().index()) {
                continue;
            }
            let from = edge.source().index();
            let part = match self.provider.requirement_kind(requirement) {
                ReqKind::Keep => {
                    kept = true;
                    self.installed_text(edge.target().index())
                }
                ReqKind::Subscription => Some(self.subscription_text()),
                ReqKind::Api(_) => self.provider_text(from),
                ReqKind::Dependency { .. } => self.requires(from, requirement),
            };
            if let Some(part) = part.filter(|p| !parts.contains(p)) {
                parts.push(part);
            }
        }
        parts.sort();
        if parts.len() < 2 {
            return None;
        }
        if let Some(gvk) = api {
            let all = if parts.len() == 2 { "both" } else { "all" };
            return Some(format!(
                "{} {all} provide API {}; only one operator in a namespace may provide an API",
                and_list(&parts),
                gvk_text(&gvk)
            ));
        }
        let mut text = format!(
            "{}; no single bundle of package {name} satisfies all of them (a namespace holds one \
             bundle per package",
            and_list(&parts)
        );
        if kept {
            text.push_str(
                ", and an installed operator is kept unless its own Subscription upgrades it",
            );
        }
        text.push(')');
        Some(text)
    }

    /// A provider of an API: its CSV, marked when installed.
    fn provider_text(&self, index: usize) -> Option<String> {
        let ConflictNode::Solvable(id) = self.node(index) else {
            return None;
        };
        let solvable = self.provider.solvable(id);
        let csv = self.provider.csv_of(&solvable);
        Some(match solvable.kind {
            Kind::Installed(_) => format!("the installed {csv}"),
            _ => csv,
        })
    }

    fn installed_text(&self, index: usize) -> Option<String> {
        let ConflictNode::Solvable(id) = self.node(index) else {
            return None;
        };
        let solvable = self.provider.solvable(id);
        let Kind::Installed(i) = solvable.kind else {
            return None;
        };
        let op = &self.provider.world.installed[i];
        Some(match &op.version {
            Some(version) => format!("{} ({version}) is installed", op.csv),
            None => format!("{} is installed", op.csv),
        })
    }

    fn subscription_text(&self) -> String {
        let world = &self.provider.world;
        let sub = &world.subscription;
        format!(
            "Subscription {} installs package {} from channel {} of catalog {}",
            sub.name, sub.package, sub.candidates.channel.name, world.catalogs[sub.catalog].id
        )
    }
}

/// "a", "a and b", "a, b and c".
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}
