//! The catalog_source reconciler.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::context::Context;
use super::manager::Shutdown;
use super::stores::Reflectors;

/// Builds the controller; the future runs until `shutdown`.
pub fn controller(
    _context: Arc<Context>,
    _reflectors: &Reflectors,
    shutdown: Shutdown,
) -> BoxFuture<'static, ()> {
    Box::pin(shutdown)
}
