//! What every layer says about a failure: the whole chain of an error as one line, and the
//! bounded facts a reconciler error gives the runtime and the metrics. Shared by the
//! controller, the metrics and the CLI, so it sits below all three.

use std::error::Error as StdError;

/// Formats an error and its sources as `outer: inner: innermost`.
pub fn error_chain(error: &(dyn StdError + 'static)) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        // Some errors repeat their source in their own message; do not print it twice.
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

/// What every reconciler error tells the runtime.
pub trait ReconcileFailure: std::error::Error + Send + Sync + 'static {
    /// Bounded label (metrics, event reasons); never a message.
    fn kind(&self) -> &'static str;
    /// Whether retrying without a change can succeed.
    fn is_transient(&self) -> bool;
}
