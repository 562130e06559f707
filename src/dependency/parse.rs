//! Dependency declarations, read as OLM v0 reads them
//! (`operator-lifecycle-manager: pkg/controller/registry/resolver/resolver.go`,
//! `predicateConverter`; `operator-framework/api: pkg/constraints/constraint.go`):
//!
//! - `olm.package.required` `{packageName, versionRange}` and `olm.gvk.required`
//!   `{group, kind, version}` properties;
//! - `olm.constraint` `{failureMessage?, package?, gvk?, all?, any?, not?, cel?}`, unknown keys
//!   refused, at most 128 KiB; when several keys are set the first of gvk, package, all, any,
//!   not wins, as in OLM. `none` (deprecated) is read as `not`. `cel` is refused: opcat does not
//!   evaluate CEL;
//! - the `dependencies:` list of a registry+v1 bundle's `metadata/dependencies.yaml`
//!   (`operator-registry: pkg/registry/types.go`): `type: olm.package` `{packageName, version}`,
//!   `type: olm.gvk` `{group, kind, version}`, `type: olm.constraint` (as above).
//!
//! `olm.label.required` / `type: olm.label` and unknown types are ignored, as legacy OLM ignores
//! unknown properties. Version ranges are checked here (blang/semver), so a bad range is
//! reported with its bundle instead of failing later.

use serde::Deserialize;
use serde_json::Value;

use super::{CatalogId, Constraint, Dependency};
use crate::fbc::property::{Gvk, Property, null_as_default, types};
use crate::semver_range::{Range, RangeError};

/// `olm.constraint`: the property type of compound and generic constraints.
pub const CONSTRAINT: &str = "olm.constraint";

/// The largest `olm.constraint` value OLM accepts (`maxConstraintSize`, 2 << 16 bytes).
const MAX_CONSTRAINT_SIZE: usize = 2 << 16;

/// A malformed dependency, with the bundle (and catalog, once known) that declares it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bundle {bundle}{}: {problem}", in_catalog(.catalog))]
pub struct DependencyError {
    /// The bundle (CSV) name.
    pub bundle: String,
    /// The catalog it was found in.
    pub catalog: Option<CatalogId>,
    /// What is wrong.
    pub problem: Box<DependencyProblem>,
}

fn in_catalog(catalog: &Option<CatalogId>) -> String {
    catalog
        .as_ref()
        .map(|c| format!(" in catalog {c}"))
        .unwrap_or_default()
}

/// What is wrong with a dependency.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DependencyProblem {
    /// `olm.constraint` with a CEL rule.
    #[error(
        "olm.constraint has a cel rule ({rule:?}), which opcat does not evaluate; \
         only package, gvk, all, any and not constraints are supported"
    )]
    Cel {
        /// The rule.
        rule: String,
    },
    /// A version range that does not parse.
    #[error("dependency on package {package} has an invalid version range {range:?}: {error}")]
    Range {
        /// The required package.
        package: String,
        /// The range text.
        range: String,
        /// Why it does not parse.
        error: RangeError,
    },
    /// A value that does not have its type's shape.
    #[error("invalid {type_} value: {message}")]
    Value {
        /// The property or dependency type.
        type_: String,
        /// The JSON error.
        message: String,
    },
    /// An `olm.constraint` with none of the known keys.
    #[error("olm.constraint is empty: it has none of package, gvk, all, any, not")]
    Empty,
    /// An `olm.constraint` over OLM's size limit.
    #[error("olm.constraint value is greater than max constraint size {MAX_CONSTRAINT_SIZE} bytes")]
    TooLarge,
}

impl DependencyError {
    /// The same error, naming the catalog too.
    pub fn in_catalog(mut self, catalog: &CatalogId) -> Self {
        self.catalog = Some(catalog.clone());
        self
    }
}

/// The dependencies a catalog bundle declares in its properties.
pub fn bundle_dependencies(
    bundle: &crate::fbc::Bundle,
) -> Result<Vec<Dependency>, DependencyError> {
    let error = |problem| DependencyError {
        bundle: bundle.name.clone(),
        catalog: None,
        problem: Box::new(problem),
    };
    let mut dependencies = Vec::new();
    for property in &bundle.properties {
        let dependency = match property {
            Property::PackageRequired(required) => {
                package(&required.package_name, &required.version_range).map_err(error)?
            }
            Property::GvkRequired(gvk) => Constraint::Gvk(gvk.clone()),
            Property::Other { type_, value } if type_ == CONSTRAINT => {
                dependencies.push(constraint_property(value.get()).map_err(error)?);
                continue;
            }
            _ => continue,
        };
        dependencies.push(Dependency {
            constraint: dependency,
            failure_message: None,
        });
    }
    Ok(dependencies)
}

/// The dependencies in the `dependencies:` lists of a registry+v1 bundle's metadata files
/// (`crate::bundle::Bundle::dependencies`).
pub fn metadata_dependencies(
    bundle_name: &str,
    entries: &[&Value],
) -> Result<Vec<Dependency>, DependencyError> {
    let error = |problem| DependencyError {
        bundle: bundle_name.to_owned(),
        catalog: None,
        problem: Box::new(problem),
    };
    let mut dependencies = Vec::new();
    for entry in entries {
        let type_ = entry
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let value = entry.get("value").cloned().unwrap_or(Value::Null);
        let shape = |e: serde_json::Error| DependencyProblem::Value {
            type_: type_.to_owned(),
            message: e.to_string(),
        };
        let constraint = match type_ {
            types::PACKAGE => {
                let legacy: LegacyPackage =
                    serde_json::from_value(value).map_err(|e| error(shape(e)))?;
                package(&legacy.package_name, &legacy.version).map_err(error)?
            }
            types::GVK => {
                Constraint::Gvk(serde_json::from_value(value).map_err(|e| error(shape(e)))?)
            }
            CONSTRAINT => {
                dependencies.push(constraint_property(&value.to_string()).map_err(error)?);
                continue;
            }
            _ => continue,
        };
        dependencies.push(Dependency {
            constraint,
            failure_message: None,
        });
    }
    Ok(dependencies)
}

/// `type: olm.package` in `dependencies.yaml`: the range is in `version`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LegacyPackage {
    #[serde(default, deserialize_with = "null_as_default")]
    package_name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    version: String,
}

fn package(name: &str, range: &str) -> Result<Constraint, DependencyProblem> {
    Range::parse(range).map_err(|error| DependencyProblem::Range {
        package: name.to_owned(),
        range: range.to_owned(),
        error,
    })?;
    Ok(Constraint::Package {
        package: name.to_owned(),
        range: range.to_owned(),
    })
}

/// An `olm.constraint` value, as JSON text.
fn constraint_property(json: &str) -> Result<Dependency, DependencyProblem> {
    if json.len() > MAX_CONSTRAINT_SIZE {
        return Err(DependencyProblem::TooLarge);
    }
    let raw: RawConstraint = serde_json::from_str(json).map_err(|e| DependencyProblem::Value {
        type_: CONSTRAINT.to_owned(),
        message: e.to_string(),
    })?;
    Ok(Dependency {
        constraint: convert(&raw)?,
        failure_message: Some(raw.failure_message).filter(|m| !m.is_empty()),
    })
}

/// `olm.constraint`, as `operator-framework/api` decodes it (`DisallowUnknownFields`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawConstraint {
    #[serde(default, deserialize_with = "null_as_default")]
    failure_message: String,
    #[serde(default)]
    cel: Option<RawCel>,
    #[serde(default)]
    package: Option<RawPackage>,
    #[serde(default)]
    gvk: Option<RawGvk>,
    #[serde(default)]
    all: Option<RawCompound>,
    #[serde(default)]
    any: Option<RawCompound>,
    #[serde(default)]
    not: Option<RawCompound>,
    #[serde(default)]
    none: Option<RawCompound>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCel {
    #[serde(default, deserialize_with = "null_as_default")]
    rule: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawPackage {
    #[serde(default, deserialize_with = "null_as_default")]
    package_name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    version_range: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGvk {
    #[serde(default, deserialize_with = "null_as_default")]
    group: String,
    #[serde(default, deserialize_with = "null_as_default")]
    kind: String,
    #[serde(default, deserialize_with = "null_as_default")]
    version: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCompound {
    #[serde(default, deserialize_with = "null_as_default")]
    constraints: Vec<RawConstraint>,
}

/// OLM's `convertConstraints`: the first of gvk, package, all, any, not (then the deprecated
/// none) decides; `cel` is refused.
fn convert(raw: &RawConstraint) -> Result<Constraint, DependencyProblem> {
    let list = |compound: &RawCompound| -> Result<Vec<Constraint>, DependencyProblem> {
        compound.constraints.iter().map(convert).collect()
    };
    if let Some(gvk) = &raw.gvk {
        return Ok(Constraint::Gvk(Gvk {
            group: gvk.group.clone(),
            kind: gvk.kind.clone(),
            version: gvk.version.clone(),
        }));
    }
    if let Some(p) = &raw.package {
        return package(&p.package_name, &p.version_range);
    }
    if let Some(all) = &raw.all {
        return Ok(Constraint::All(list(all)?));
    }
    if let Some(any) = &raw.any {
        return Ok(Constraint::Any(list(any)?));
    }
    if let Some(not) = raw.not.as_ref().or(raw.none.as_ref()) {
        let mut items = list(not)?;
        let inner = if items.len() == 1 {
            items.remove(0)
        } else {
            Constraint::Any(items)
        };
        return Ok(Constraint::Not(Box::new(inner)));
    }
    if let Some(cel) = &raw.cel {
        return Err(DependencyProblem::Cel {
            rule: cel.rule.clone(),
        });
    }
    Err(DependencyProblem::Empty)
}
