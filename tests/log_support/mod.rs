//! opcat's logs, captured in memory for tests that check what they hold (DESIGN invariant 8:
//! no secret data in any log). The subscriber is process-wide: a test binary that uses this
//! module captures every test's logs in one buffer, and installs no other subscriber.
// Test support: a failed lock aborts the test.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// A log sink: everything written is kept.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Everything logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs (once per process) a subscriber writing opcat's logs at every level, and
/// kube-runtime's at debug, into the returned buffer.
pub fn capture_logs() -> Captured {
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    CAPTURED
        .get_or_init(|| {
            let captured = Captured::default();
            let writer = captured.clone();
            tracing_subscriber::fmt()
                .with_env_filter("opcat=trace,kube_runtime=debug")
                .with_writer(move || writer.clone())
                .with_ansi(false)
                .init();
            captured
        })
        .clone()
}
