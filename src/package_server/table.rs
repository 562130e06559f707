//! Server-side printing: `Table` (`kubectl get`) and `PartialObjectMetadata` answers.
//!
//! Columns as packageserver's printer (`operator-lifecycle-manager:
//! pkg/package-server/storage/printer.go`): `Name`, `Catalog` (the CatalogSource's display
//! name) and `Age` (from the CatalogSource's creation time), with the generic API server's
//! `includeObject` handling (default `Metadata`: each row carries a `PartialObjectMetadata`).

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::types::PackageManifest;

/// What each Table row carries (`includeObject`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// Nothing.
    None,
    /// `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query parameter.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "" | "Metadata" => Some(Self::Metadata),
            "None" => Some(Self::None),
            "Object" => Some(Self::Object),
            _ => None,
        }
    }
}

/// The Table of `items` at `now`, as `meta.k8s.io/<version>` (`v1` or `v1beta1`).
pub fn table(
    items: &[PackageManifest],
    include: IncludeObject,
    version: &str,
    now: Timestamp,
) -> Value {
    let rows: Vec<Value> = items
        .iter()
        .map(|manifest| {
            let age = manifest.metadata.creation_timestamp.as_ref().map_or_else(
                || "<unknown>".to_owned(),
                |time| human_duration(now, time.0),
            );
            let mut row = json!({
                "cells": [
                    manifest.metadata.name.clone().unwrap_or_default(),
                    manifest.status.catalog_source_display_name,
                    age,
                ],
            });
            let object = match include {
                IncludeObject::None => None,
                IncludeObject::Metadata => Some(partial_metadata(manifest, version)),
                IncludeObject::Object => serde_json::to_value(manifest).ok(),
            };
            if let (Some(object), Some(map)) = (object, row.as_object_mut()) {
                map.insert("object".to_owned(), object);
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": {},
        "columnDefinitions": [
            {
                "name": "Name", "type": "string", "format": "name", "priority": 0,
                "description": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
            },
            {
                "name": "Catalog", "type": "string", "format": "", "priority": 0,
                "description": "The source catalog for this package",
            },
            {
                "name": "Age", "type": "string", "format": "", "priority": 0,
                "description": "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.",
            },
        ],
        "rows": rows,
    })
}

/// `PartialObjectMetadata` of `manifest` (`meta.k8s.io/<version>`).
pub fn partial_metadata(manifest: &PackageManifest, version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": manifest.metadata,
    })
}

/// `PartialObjectMetadataList` of `items`.
pub fn partial_metadata_list(items: &[PackageManifest], version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": {},
        "items": items.iter().map(|m| partial_metadata(m, version)).collect::<Vec<_>>(),
    })
}

/// `k8s.io/apimachinery/pkg/util/duration.HumanDuration` of the time from `since` to `now`.
pub fn human_duration(now: Timestamp, since: Timestamp) -> String {
    let seconds = now.as_second().saturating_sub(since.as_second());
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    let seconds = seconds.max(0);
    let minutes = seconds / 60;
    let hours = seconds / 3600;
    if seconds < 120 {
        format!("{seconds}s")
    } else if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        }
    } else if minutes < 3 * 60 {
        format!("{minutes}m")
    } else if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        }
    } else if hours < 24 * 365 * 2 {
        format!("{}d", hours / 24)
    } else if hours < 24 * 365 * 8 {
        let days = hours / 24;
        let d = days % 365;
        if d == 0 {
            format!("{}y", days / 365)
        } else {
            format!("{}y{d}d", days / 365)
        }
    } else {
        format!("{}y", hours / 24 / 365)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        let start: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let at = |seconds: i64| Timestamp::from_second(start.as_second() + seconds).unwrap();
        for (seconds, expected) in [
            (5, "5s"),
            (119, "119s"),
            (150, "2m30s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (10 * 3600, "10h"),
            (3 * 86400 + 3600, "3d1h"),
            (30 * 86400, "30d"),
            (3 * 365 * 86400 + 86400, "3y1d"),
        ] {
            assert_eq!(human_duration(at(seconds), start), expected, "{seconds}");
        }
    }
}
