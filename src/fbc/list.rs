//! `catalog list` views: `opm alpha list` text (byte for byte) and a JSON document.
//!
//! Text columns as in `operator-registry:alpha/action/list.go`: packages (name, the default
//! channel head's CSV `displayName`, default channel), channels (package, channel, head) and
//! bundles (package, channel, bundle, replaces, skips, skipRange, image), sorted like `opm`.
//! Like `opm`, the display name comes only from a CSV embedded as `olm.bundle.object` (not from
//! `olm.csv.metadata`).

use serde::Serialize;

use super::blob::ChannelEntry;
use super::model::{Catalog, Channel, Package};

/// The requested package does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("package {0:?} not found")]
pub struct PackageNotFound(pub String);

/// Go's `text/tabwriter` with minwidth 0, tabwidth 4, padding 2, padchar ' ', no flags, for
/// rows written as `cell\tcell\t...\tlast\n`: every cell but the last is padded with spaces to
/// its column's widest cell plus 2; the last cell is written as is.
pub fn tabwrite(rows: &[Vec<String>]) -> String {
    let columns = rows
        .iter()
        .map(|r| r.len().saturating_sub(1))
        .max()
        .unwrap_or(0);
    let mut widths = vec![0usize; columns];
    for row in rows {
        for (i, cell) in row.iter().take(row.len().saturating_sub(1)).enumerate() {
            widths[i] = widths[i].max(cell.chars().count() + 2);
        }
    }
    let mut out = String::new();
    for row in rows {
        let last = row.len().saturating_sub(1);
        for (i, cell) in row.iter().enumerate() {
            out.push_str(cell);
            if i < last {
                out.extend(std::iter::repeat_n(' ', widths[i] - cell.chars().count()));
            }
        }
        out.push('\n');
    }
    out
}

fn selected<'a>(
    catalog: &'a Catalog,
    package: Option<&str>,
) -> Result<Vec<&'a Package>, PackageNotFound> {
    match package {
        None => Ok(catalog.packages().collect()),
        Some(name) => catalog
            .package(name)
            .map(|p| vec![p])
            .ok_or_else(|| PackageNotFound(name.to_owned())),
    }
}

/// The display name `opm` shows: `spec.displayName` of the default channel head's CSV.
fn display_name(package: &Package) -> String {
    package
        .default_channel()
        .and_then(|c| package.bundle(&c.head().name))
        .and_then(|b| b.csv())
        .and_then(|csv| {
            csv.pointer("/spec/displayName")?
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

/// `opm alpha list packages`.
pub fn packages_text(catalog: &Catalog, package: Option<&str>) -> Result<String, PackageNotFound> {
    let mut rows = vec![vec![
        "NAME".to_owned(),
        "DISPLAY NAME".to_owned(),
        "DEFAULT CHANNEL".to_owned(),
    ]];
    for p in selected(catalog, package)? {
        rows.push(vec![
            p.name.clone(),
            display_name(p),
            p.default_channel.clone(),
        ]);
    }
    Ok(tabwrite(&rows))
}

/// `opm alpha list channels`.
pub fn channels_text(catalog: &Catalog, package: Option<&str>) -> Result<String, PackageNotFound> {
    let mut rows = vec![vec![
        "PACKAGE".to_owned(),
        "CHANNEL".to_owned(),
        "HEAD".to_owned(),
    ]];
    for p in selected(catalog, package)? {
        for c in p.channels() {
            rows.push(vec![p.name.clone(), c.name.clone(), c.head().name.clone()]);
        }
    }
    Ok(tabwrite(&rows))
}

/// `opm alpha list bundles`.
pub fn bundles_text(catalog: &Catalog, package: Option<&str>) -> Result<String, PackageNotFound> {
    let mut rows = vec![
        [
            "PACKAGE",
            "CHANNEL",
            "BUNDLE",
            "REPLACES",
            "SKIPS",
            "SKIP RANGE",
            "IMAGE",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for p in selected(catalog, package)? {
        for c in p.channels() {
            let mut entries: Vec<_> = c.entries.iter().collect();
            entries.sort_by(|a, b| a.name.cmp(&b.name));
            for e in entries {
                rows.push(vec![
                    p.name.clone(),
                    c.name.clone(),
                    e.name.clone(),
                    e.replaces.clone().unwrap_or_default(),
                    e.skips.join(","),
                    e.skip_range.clone().unwrap_or_default(),
                    p.bundle(&e.name)
                        .map(|b| b.image.clone())
                        .unwrap_or_default(),
                ]);
            }
        }
    }
    Ok(tabwrite(&rows))
}

/// The JSON view: `{"packages":[{"name","defaultChannel","channels":[{"name","head",
/// "entries":[...]}]}]}`, packages and channels sorted by name, entries head first along the
/// `replaces` chain, then skipped entries in the order written.
#[derive(Debug, Serialize)]
pub struct ListJson {
    /// The packages.
    pub packages: Vec<PackageJson>,
}

/// One package in [`ListJson`].
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageJson {
    /// Package name.
    pub name: String,
    /// Default channel.
    pub default_channel: String,
    /// Deprecation message, if deprecated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<String>,
    /// Channels.
    pub channels: Vec<ChannelJson>,
}

/// One channel in [`ListJson`].
#[derive(Debug, Serialize)]
pub struct ChannelJson {
    /// Channel name.
    pub name: String,
    /// Head bundle.
    pub head: String,
    /// Deprecation message, if deprecated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<String>,
    /// Entries.
    pub entries: Vec<EntryJson>,
}

/// One channel entry in [`ListJson`]: the entry's fields plus its bundle's.
#[derive(Debug, Serialize)]
pub struct EntryJson {
    /// The channel entry (name, replaces, skips, skipRange).
    #[serde(flatten)]
    pub entry: ChannelEntry,
    /// Bundle version (with release, if any).
    pub version: String,
    /// Bundle image.
    pub image: String,
    /// Deprecation message, if deprecated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<String>,
}

fn channel_json(package: &Package, channel: &Channel) -> ChannelJson {
    let mut ordered: Vec<_> = channel.upgrade_order().collect();
    for entry in &channel.entries {
        if !ordered.iter().any(|e| e.name == entry.name) {
            ordered.push(entry);
        }
    }
    ChannelJson {
        name: channel.name.clone(),
        head: channel.head().name.clone(),
        deprecation: channel.deprecation.clone(),
        entries: ordered
            .into_iter()
            .map(|e| {
                let bundle = package.bundle(&e.name);
                EntryJson {
                    entry: e.clone(),
                    version: bundle.map(|b| b.version_string()).unwrap_or_default(),
                    image: bundle.map(|b| b.image.clone()).unwrap_or_default(),
                    deprecation: bundle.and_then(|b| b.deprecation.clone()),
                }
            })
            .collect(),
    }
}

/// The JSON view of the catalog (or of one package).
pub fn to_json(catalog: &Catalog, package: Option<&str>) -> Result<ListJson, PackageNotFound> {
    Ok(ListJson {
        packages: selected(catalog, package)?
            .into_iter()
            .map(|p| PackageJson {
                name: p.name.clone(),
                default_channel: p.default_channel.clone(),
                deprecation: p.deprecation.clone(),
                channels: p.channels().map(|c| channel_json(p, c)).collect(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|c| (*c).to_owned()).collect()
    }

    #[test]
    fn tabwriter_pads_all_but_the_last_cell() {
        let text = tabwrite(&[
            row(&["NAME", "X", "LAST"]),
            row(&["a-long-name", "", ""]),
            row(&["b", "yy", "z"]),
        ]);
        assert_eq!(
            text,
            "NAME         X   LAST\na-long-name      \nb            yy  z\n"
        );
    }
}
