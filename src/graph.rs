//! Channel upgrade graphs (olm-api.md §5.5 item 12 and §6.1).
//!
//! The edges of a channel are `replaces` and `skips` (a `skipRange` is **not** an edge). The
//! head is the one entry nothing points at; the graph, not the version number, decides it.
//! From the head the `replaces` chain is followed; the walk stops at a `replaces` target that
//! some entry skips, or that is not in the channel (the tail may replace a bundle that does not
//! exist). Every entry must be on that chain or be skipped by some entry, else it is stranded.
//!
//! [`ChannelGraph::upgrade_order`] is the channel in OLM's resolution order: the chain from the
//! head, without skipped entries (OLM's `sortChannel`).

use std::collections::{HashMap, HashSet};

use crate::fbc::ChannelEntry;

/// Why a channel's entries do not form a valid upgrade graph. Messages are `opm`'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// The channel has no entries.
    #[error("channel must contain at least one bundle")]
    Empty,
    /// Every entry is replaced or skipped by another one.
    #[error("no channel head found in graph")]
    NoHead,
    /// More than one entry is not replaced or skipped by any other (sorted names).
    #[error("multiple channel heads found in graph: {}", .0.join(", "))]
    MultipleHeads(Vec<String>),
    /// The `replaces` chain from the head comes back to an entry (the loop, first name repeated
    /// at the end).
    #[error("detected cycle in replaces chain of upgrade graph: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    /// Entries neither on the chain from the head nor skipped (sorted names).
    #[error("channel contains one or more stranded bundles: {}", .0.join(", "))]
    Stranded(Vec<String>),
}

impl GraphError {
    /// A short, stable label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            GraphError::Empty => "empty_channel",
            GraphError::NoHead => "no_head",
            GraphError::MultipleHeads(_) => "multiple_heads",
            GraphError::Cycle(_) => "cycle",
            GraphError::Stranded(_) => "stranded",
        }
    }
}

/// A validated channel graph, as indices into the channel's entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelGraph {
    head: usize,
    order: Vec<usize>,
}

impl ChannelGraph {
    /// Checks the channel's graph and computes its head and upgrade order. When an entry name
    /// appears twice, the first one counts (duplicates are a separate validation error).
    pub fn new(entries: &[ChannelEntry]) -> Result<Self, GraphError> {
        if entries.is_empty() {
            return Err(GraphError::Empty);
        }
        let mut index: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            index.entry(entry.name.as_str()).or_insert(i);
        }
        let mut incoming = vec![false; entries.len()];
        let mut skipped: HashSet<&str> = HashSet::new();
        for entry in entries {
            if let Some(&target) = entry.replaces.as_deref().and_then(|r| index.get(r)) {
                incoming[target] = true;
            }
            for skip in &entry.skips {
                skipped.insert(skip.as_str());
                if let Some(&target) = index.get(skip.as_str()) {
                    incoming[target] = true;
                }
            }
        }
        let mut heads: Vec<usize> = index.values().copied().filter(|&i| !incoming[i]).collect();
        let head = match heads.len() {
            0 => return Err(GraphError::NoHead),
            1 => heads[0],
            _ => {
                heads.sort_by(|&a, &b| entries[a].name.cmp(&entries[b].name));
                return Err(GraphError::MultipleHeads(
                    heads.into_iter().map(|i| entries[i].name.clone()).collect(),
                ));
            }
        };

        let mut chain: Vec<&str> = vec![entries[head].name.as_str()];
        let mut on_chain: HashSet<&str> = chain.iter().copied().collect();
        let mut order = vec![head];
        let mut current = head;
        while let Some(target) = entries[current].replaces.as_deref() {
            if skipped.contains(target) {
                break;
            }
            if on_chain.contains(target) {
                let start = chain.iter().position(|&n| n == target).unwrap_or(0);
                let mut cycle: Vec<String> =
                    chain[start..].iter().map(|s| (*s).to_owned()).collect();
                cycle.push(target.to_owned());
                return Err(GraphError::Cycle(cycle));
            }
            chain.push(target);
            on_chain.insert(target);
            match index.get(target) {
                Some(&next) => {
                    order.push(next);
                    current = next;
                }
                None => break,
            }
        }

        let mut stranded: Vec<String> = index
            .keys()
            .filter(|name| !on_chain.contains(*name) && !skipped.contains(*name))
            .map(|name| (*name).to_owned())
            .collect();
        if !stranded.is_empty() {
            stranded.sort();
            return Err(GraphError::Stranded(stranded));
        }
        Ok(Self { head, order })
    }

    /// Index of the head entry.
    pub fn head(&self) -> usize {
        self.head
    }

    /// Entry indices from the head along the `replaces` chain, skipped entries left out: the
    /// order in which OLM prefers upgrade candidates (closest to the head first).
    pub fn upgrade_order(&self) -> &[usize] {
        &self.order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, replaces: Option<&str>, skips: &[&str]) -> ChannelEntry {
        ChannelEntry {
            name: name.to_owned(),
            replaces: replaces.map(str::to_owned),
            skips: skips.iter().map(|s| (*s).to_owned()).collect(),
            skip_range: None,
        }
    }

    fn names(entries: &[ChannelEntry], graph: &ChannelGraph) -> Vec<String> {
        graph
            .upgrade_order()
            .iter()
            .map(|&i| entries[i].name.clone())
            .collect()
    }

    #[test]
    fn head_and_order_follow_replaces() {
        let entries = [
            entry("a.v1", Some("a.v0"), &[]),
            entry("a.v3", Some("a.v2"), &[]),
            entry("a.v2", Some("a.v1"), &[]),
        ];
        let graph = ChannelGraph::new(&entries).unwrap();
        assert_eq!(entries[graph.head()].name, "a.v3");
        assert_eq!(
            names(&entries, &graph),
            ["a.v3", "a.v2", "a.v1"],
            "the missing a.v0 tail is fine"
        );
    }

    #[test]
    fn skips_only_graph_has_the_skipper_as_head() {
        let entries = [
            entry("b.v1", None, &[]),
            entry("b.v2", None, &[]),
            entry("b.v3", None, &["b.v1", "b.v2"]),
        ];
        let graph = ChannelGraph::new(&entries).unwrap();
        assert_eq!(entries[graph.head()].name, "b.v3");
        assert_eq!(
            names(&entries, &graph),
            ["b.v3"],
            "skipped entries are not upgrade candidates"
        );
    }

    #[test]
    fn opm_error_messages() {
        let cases: Vec<(Vec<ChannelEntry>, &str)> = vec![
            (vec![], "channel must contain at least one bundle"),
            (
                vec![
                    entry("x.v1", Some("x.v2"), &[]),
                    entry("x.v2", Some("x.v1"), &[]),
                ],
                "no channel head found in graph",
            ),
            (
                vec![entry("x.v3", None, &[]), entry("x.v4", None, &[])],
                "multiple channel heads found in graph: x.v3, x.v4",
            ),
            (
                vec![
                    entry("x.v5", Some("x.v4"), &[]),
                    entry("x.v4", Some("x.v4"), &[]),
                ],
                "detected cycle in replaces chain of upgrade graph: x.v4 -> x.v4",
            ),
            (
                vec![
                    entry("x.v4", Some("x.v3"), &[]),
                    entry("x.v3", Some("x.v2"), &[]),
                    entry("x.v2", Some("x.v1"), &[]),
                    entry("x.v1", Some("x.v3"), &[]),
                ],
                "detected cycle in replaces chain of upgrade graph: x.v3 -> x.v2 -> x.v1 -> x.v3",
            ),
            (
                // Skipping the replaces target stops the walk: x.v1 is then stranded.
                vec![
                    entry("x.v3", Some("x.v2"), &["x.v2"]),
                    entry("x.v2", Some("x.v1"), &[]),
                    entry("x.v1", None, &[]),
                ],
                "channel contains one or more stranded bundles: x.v1",
            ),
        ];
        for (entries, message) in cases {
            assert_eq!(
                ChannelGraph::new(&entries).unwrap_err().to_string(),
                message
            );
        }
    }
}
