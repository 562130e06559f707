//! registry+v1 bundles: `manifests/` + `metadata/`. So far only the annotations that label
//! bundle images; the bundle model and rendering come with a later issue.
pub mod annotations;
