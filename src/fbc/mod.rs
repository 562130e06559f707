//! File-based catalogs (FBC): loading, validation (`opm validate` rules), the indexed model,
//! and the `list` / `render` views.
//!
//! Pure except [`load`], which reads files. Typical use:
//!
//! ```no_run
//! let catalog = opcat::fbc::Catalog::load(std::path::Path::new("catalog"))?;
//! let package = catalog.package("etcd").expect("package");
//! let head = package.default_channel().expect("default channel").head();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod base64;
pub mod blob;
mod config;
mod csv_metadata;
pub mod image_ref;
pub mod list;
mod load;
mod meta_keys;
mod model;
mod problem;
pub mod property;
pub mod render;
mod validate;
pub mod version;
pub mod yaml;

pub use blob::{
    Blob, BlobError, BundleBlob, ChannelBlob, ChannelEntry, DeprecationEntry, DeprecationsBlob,
    Icon, Meta, PackageBlob, PackageScopedReference, RelatedImage,
};
pub use config::{DeclarativeConfig, DocumentError, DocumentErrorKind};
pub use load::{INDEX_IGNORE, LoadError, LoadOptions, catalog_files, load, load_with};
pub use model::{Bundle, Catalog, CatalogError, Channel, Package};
pub use problem::{Problem, ValidationError};
pub use property::Property;
pub use validate::validate;
