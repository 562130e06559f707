//! TODO(skeleton): filled in by the issue that builds this module.
