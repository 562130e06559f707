//! What the solver chooses from, in OLM's order (olm-api.md §6.2; OLM's
//! `resolver/cache/cache.go` `sortableSnapshots.Less` and `resolver.go` `sortBundles`).
//! Everything here is computed per package on request: a resolution only looks at the packages
//! its requirements reach (the API index is the one full pass, over properties only).

use std::cell::OnceCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use super::{CatalogId, InstalledOperator, Problem, VisibleCatalog, provided_apis};
use crate::fbc::property::Gvk;
use crate::fbc::{Bundle, Catalog};
use crate::resolve::{Candidates, ResolveError, ResolveRequest, candidates};

/// The catalogs and installed operators of one resolution.
pub(super) struct World<'p> {
    pub(super) namespace: &'p str,
    /// Visible catalogs, best first: the Subscription's own catalog, then higher priority, then
    /// the Subscription's namespace before others, then name. The index is the catalog's rank.
    pub(super) catalogs: Vec<&'p VisibleCatalog<'p>>,
    /// Installed operators, one per package (the Subscription's own CSV included, made up from
    /// the Subscription when the caller did not list it).
    pub(super) installed: Vec<InstalledOperator>,
    /// The Subscription's package and its candidates from its own catalog.
    pub(super) subscription: Subscription<'p>,
    apis: OnceCell<BTreeMap<Gvk, BTreeSet<String>>>,
}

/// The Subscription's side of the problem.
pub(super) struct Subscription<'p> {
    pub(super) name: String,
    pub(super) package: String,
    /// Rank of its catalog in [`World::catalogs`].
    pub(super) catalog: usize,
    /// Bundles to try, most preferred first (then the installed CSV, if any).
    pub(super) candidates: Candidates<'p>,
    /// Index of its installed CSV in [`World::installed`].
    pub(super) installed: Option<usize>,
}

/// A bundle of a catalog, with the channel it is offered in first.
#[derive(Clone, Copy)]
pub(super) struct Offer<'p> {
    pub(super) rank: usize,
    pub(super) bundle: &'p Bundle,
    pub(super) channel: &'p str,
    /// Position in the catalog's preference order for the package.
    pub(super) position: u32,
}

impl<'p> World<'p> {
    pub(super) fn new(problem: &'p Problem<'p>) -> Result<Self, ResolveError> {
        let sub = &problem.subscription;
        let mut catalogs: Vec<&VisibleCatalog<'_>> = problem.catalogs.iter().collect();
        catalogs.sort_by_key(|c| {
            (
                c.id != sub.catalog,
                Reverse(c.priority),
                c.id.namespace != problem.namespace,
                c.id.name.clone(),
                c.id.namespace.clone(),
            )
        });
        catalogs.dedup_by(|a, b| a.id == b.id);
        let Some(rank) = catalogs.iter().position(|c| c.id == sub.catalog) else {
            return Err(ResolveError::PackageNotFound {
                package: sub.package.clone(),
            });
        };
        let found = candidates(catalogs[rank].catalog, &problem_request(problem))?;

        let mut installed: Vec<InstalledOperator> = Vec::new();
        for op in &problem.installed {
            if op.package == sub.package && Some(&op.csv) != sub.installed.as_ref() {
                continue;
            }
            if !installed.iter().any(|o| o.package == op.package) {
                installed.push(op.clone());
            }
        }
        let mut own = None;
        if let Some(csv) = sub.installed.as_deref().filter(|c| !c.is_empty()) {
            own = Some(match installed.iter().position(|o| o.csv == csv) {
                Some(index) => index,
                None => {
                    let package = found.package;
                    let bundle = package.bundle(csv);
                    installed.push(InstalledOperator {
                        csv: csv.to_owned(),
                        package: sub.package.clone(),
                        version: sub
                            .installed_version
                            .clone()
                            .or_else(|| bundle.map(|b| b.version.clone())),
                        catalog: Some(sub.catalog.clone()),
                        provides: bundle.map(provided_apis).unwrap_or_default(),
                        dependencies: Vec::new(),
                    });
                    installed.len() - 1
                }
            });
        }
        Ok(Self {
            namespace: problem.namespace,
            catalogs,
            installed,
            subscription: Subscription {
                name: sub.name.clone(),
                package: sub.package.clone(),
                catalog: rank,
                candidates: found,
                installed: own,
            },
            apis: OnceCell::new(),
        })
    }

    /// Rank of a catalog, if visible.
    pub(super) fn rank(&self, id: &CatalogId) -> Option<usize> {
        self.catalogs.iter().position(|c| &c.id == id)
    }

    /// The catalogs' offers of `package`, best first. The Subscription's package is offered only
    /// by the Subscription's catalog, in its candidate order.
    pub(super) fn offers(&self, package: &str) -> Vec<Offer<'p>> {
        let sub = &self.subscription;
        if package == sub.package {
            let channel = sub.candidates.channel.name.as_str();
            return sub
                .candidates
                .entries
                .iter()
                .zip(0..)
                .filter_map(|(entry, position)| {
                    Some(Offer {
                        rank: sub.catalog,
                        bundle: sub.candidates.package.bundle(&entry.name)?,
                        channel,
                        position,
                    })
                })
                .collect();
        }
        let mut offers = Vec::new();
        for (rank, visible) in self.catalogs.iter().enumerate() {
            offers.extend(package_offers(visible.catalog, package, rank));
        }
        offers
    }

    /// Packages providing `gvk`, installed or in any visible catalog.
    pub(super) fn providers(&self, gvk: &Gvk) -> BTreeSet<String> {
        self.api_index().get(gvk).cloned().unwrap_or_default()
    }

    /// Every package of every visible catalog, and the installed ones.
    pub(super) fn all_packages(&self) -> BTreeSet<String> {
        let mut all: BTreeSet<String> = self.installed.iter().map(|o| o.package.clone()).collect();
        for visible in &self.catalogs {
            all.extend(visible.catalog.packages().map(|p| p.name.clone()));
        }
        all
    }

    /// Whether `package` has anything to offer from catalog `rank`.
    pub(super) fn offered_by(&self, package: &str, rank: usize) -> bool {
        if package == self.subscription.package {
            return rank == self.subscription.catalog;
        }
        self.catalogs[rank].catalog.package(package).is_some()
    }

    fn api_index(&self) -> &BTreeMap<Gvk, BTreeSet<String>> {
        self.apis.get_or_init(|| {
            let mut index: BTreeMap<Gvk, BTreeSet<String>> = BTreeMap::new();
            for op in &self.installed {
                for gvk in &op.provides {
                    index
                        .entry(gvk.clone())
                        .or_default()
                        .insert(op.package.clone());
                }
            }
            for visible in &self.catalogs {
                for bundle in visible.catalog.packages().flat_map(|p| p.bundles()) {
                    for gvk in provided_apis(bundle) {
                        index.entry(gvk).or_default().insert(bundle.package.clone());
                    }
                }
            }
            index
        })
    }
}

fn problem_request(problem: &Problem<'_>) -> ResolveRequest {
    let sub = &problem.subscription;
    ResolveRequest {
        package: sub.package.clone(),
        channel: sub.channel.clone(),
        installed: sub.installed.clone(),
        installed_version: sub.installed_version.clone(),
        starting_csv: sub.starting_csv.clone(),
    }
}

/// The bundles of `package` in `catalog`: default channel first, then the others by name, each
/// from its head along the upgrade graph; a bundle in several channels counts once, where it
/// first appears. Entries the graph skips are left out, as OLM's `sortChannel` leaves them out.
fn package_offers<'p>(catalog: &'p Catalog, package: &str, rank: usize) -> Vec<Offer<'p>> {
    let Some(package) = catalog.package(package) else {
        return Vec::new();
    };
    let channels = package.default_channel().into_iter().chain(
        package
            .channels()
            .filter(|c| c.name != package.default_channel),
    );
    let mut seen = BTreeSet::new();
    let mut offers = Vec::new();
    for channel in channels {
        for entry in channel.upgrade_order() {
            let Some(bundle) = package.bundle(&entry.name) else {
                continue;
            };
            if seen.insert(bundle.name.as_str()) {
                offers.push(Offer {
                    rank,
                    bundle,
                    channel: &channel.name,
                    position: u32::try_from(offers.len()).unwrap_or(u32::MAX),
                });
            }
        }
    }
    offers
}
