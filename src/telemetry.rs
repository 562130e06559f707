//! Logging setup: `tracing` with an `EnvFilter` from `RUST_LOG` (default `info`) and either
//! human-readable text or one JSON object per line.

use std::io::IsTerminal;
use std::str::FromStr;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;

/// Output format of the logs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (default for local runs).
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            other => Err(format!("unknown log format {other:?} (use text or json)")),
        }
    }
}

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("invalid RUST_LOG filter {filter:?}: {reason}")]
    Filter { filter: String, reason: String },
    #[error("a global tracing subscriber is already installed")]
    AlreadyInstalled,
}

/// Installs the global subscriber. Logs go to stderr so that command output on stdout stays
/// machine-readable; text logs are coloured only when stderr is a terminal (a file or a log
/// collector gets no ANSI escapes).
pub fn init(format: LogFormat, default_directive: &str) -> Result<(), TelemetryError> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(text) if !text.trim().is_empty() => {
            EnvFilter::try_new(&text).map_err(|error| TelemetryError::Filter {
                filter: text.clone(),
                reason: error.to_string(),
            })?
        }
        _ => EnvFilter::new(default_directive),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_span_events(FmtSpan::NONE);
    let result = match format {
        LogFormat::Text => builder.with_target(true).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init(),
    };
    result.map_err(|_| TelemetryError::AlreadyInstalled)
}
