//! A health probe that behaves like `grpc_health_probe` (grpc-ecosystem/grpc-health-probe), the
//! command OLM's catalog pods run as readiness, liveness and startup probe
//! (`grpc_health_probe -addr=:50051`, OLM `pkg/controller/registry/reconciler/reconciler.go`):
//! Go-style flags `-addr`, `-service`, `-connect-timeout`, `-rpc-timeout` (as `-flag=value`,
//! `--flag=value` or `-flag value`), and its exit codes: 0 serving, 1 bad arguments, 2 no
//! connection, 3 the call failed, 4 not serving.
//!
//! `opcat catalog probe` runs it, and so does the `opcat` binary when it is started under the
//! name `grpc_health_probe` (a link in the catalog image), so an image built on opcat's needs
//! no other binary.

use std::time::Duration;

use tonic::transport::Endpoint;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use super::client::endpoint_uri;
use crate::go_duration;

/// The probe's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// `HOST:PORT`; `:PORT` means localhost.
    pub addr: String,
    /// Service to check (`""`: the server as a whole).
    pub service: String,
    pub connect_timeout: Duration,
    pub rpc_timeout: Duration,
}

impl Default for Probe {
    fn default() -> Self {
        Self {
            addr: String::new(),
            service: String::new(),
            connect_timeout: Duration::from_secs(1),
            rpc_timeout: Duration::from_secs(1),
        }
    }
}

/// How a probe ended, with `grpc_health_probe`'s exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Serving,
    InvalidArguments(String),
    ConnectionFailed(String),
    RpcFailed(String),
    Unhealthy(String),
}

impl Outcome {
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Serving => 0,
            Outcome::InvalidArguments(_) => 1,
            Outcome::ConnectionFailed(_) => 2,
            Outcome::RpcFailed(_) => 3,
            Outcome::Unhealthy(_) => 4,
        }
    }

    /// What `grpc_health_probe` prints.
    pub fn message(&self) -> String {
        match self {
            Outcome::Serving => "status: SERVING".to_owned(),
            Outcome::InvalidArguments(m)
            | Outcome::ConnectionFailed(m)
            | Outcome::RpcFailed(m)
            | Outcome::Unhealthy(m) => m.clone(),
        }
    }
}

/// Parses Go-style flags (`args` without the program name).
pub fn parse_args(args: &[String]) -> Result<Probe, String> {
    let mut probe = Probe::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let flag = arg
            .strip_prefix("--")
            .or_else(|| arg.strip_prefix('-'))
            .ok_or_else(|| format!("unexpected argument {arg:?}"))?;
        let name = flag.split_once('=').map_or(flag, |(name, _)| name);
        if !["addr", "service", "connect-timeout", "rpc-timeout"].contains(&name) {
            return Err(format!("flag provided but not defined: -{name}"));
        }
        let (name, value) = match flag.split_once('=') {
            Some((name, value)) => (name, value.to_owned()),
            None => {
                let value = rest
                    .next()
                    .ok_or_else(|| format!("flag needs an argument: -{flag}"))?;
                (flag, value.clone())
            }
        };
        let duration = |value: &str| {
            go_duration::parse(value)
                .map_err(|error| format!("invalid value {value:?} for flag -{name}: {error}"))
        };
        match name {
            "addr" => probe.addr = value,
            "service" => probe.service = value,
            "connect-timeout" => probe.connect_timeout = duration(&value)?,
            _ => probe.rpc_timeout = duration(&value)?,
        }
    }
    if probe.addr.is_empty() {
        return Err("--addr not specified".to_owned());
    }
    if probe.connect_timeout.is_zero() || probe.rpc_timeout.is_zero() {
        return Err("timeouts must be greater than zero".to_owned());
    }
    Ok(probe)
}

/// Runs the probe.
pub async fn run(probe: &Probe) -> Outcome {
    let address = match probe.addr.strip_prefix(':') {
        Some(port) => format!("localhost:{port}"),
        None => probe.addr.clone(),
    };
    let uri = match endpoint_uri(&address) {
        Ok(uri) => uri,
        Err(error) => return Outcome::InvalidArguments(format!("invalid -addr: {error}")),
    };
    let endpoint = Endpoint::from(uri).connect_timeout(probe.connect_timeout);
    let channel = match tokio::time::timeout(probe.connect_timeout, endpoint.connect()).await {
        Ok(Ok(channel)) => channel,
        Ok(Err(error)) => {
            return Outcome::ConnectionFailed(format!(
                "error: failed to connect service at {:?}: {error}",
                probe.addr
            ));
        }
        Err(_) => {
            return Outcome::ConnectionFailed(format!(
                "timeout: failed to connect service {:?} within {:?}",
                probe.addr, probe.connect_timeout
            ));
        }
    };
    let request = HealthCheckRequest {
        service: probe.service.clone(),
    };
    let mut health = HealthClient::new(channel);
    match tokio::time::timeout(probe.rpc_timeout, health.check(request)).await {
        Err(_) => Outcome::RpcFailed(format!(
            "timeout: health rpc did not complete within {:?}",
            probe.rpc_timeout
        )),
        Ok(Err(status)) if status.code() == tonic::Code::Unimplemented => {
            Outcome::RpcFailed(format!(
                "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): {}",
                status.message()
            ))
        }
        Ok(Err(status)) => Outcome::RpcFailed(format!(
            "error: health rpc failed: {:?}: {}",
            status.code(),
            status.message()
        )),
        Ok(Ok(answer)) => match answer.into_inner().status() {
            ServingStatus::Serving => Outcome::Serving,
            other => Outcome::Unhealthy(format!(
                "service unhealthy (responded with {:?})",
                other.as_str_name()
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn flags_are_read_the_way_go_reads_them() {
        let probe = parse_args(&args(&["-addr=:50051", "-rpc-timeout=10s"])).unwrap();
        assert_eq!(probe.addr, ":50051");
        assert_eq!(probe.rpc_timeout, Duration::from_secs(10));
        let probe = parse_args(&args(&[
            "--addr",
            "localhost:1",
            "-service",
            "Registry",
            "-connect-timeout=250ms",
        ]))
        .unwrap();
        assert_eq!(
            (probe.addr.as_str(), probe.service.as_str()),
            ("localhost:1", "Registry")
        );
        assert_eq!(probe.connect_timeout, Duration::from_millis(250));
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        for (given, expected) in [
            (vec![], "--addr not specified"),
            (vec!["-addr"], "flag needs an argument: -addr"),
            (
                vec!["-addr=:1", "-tls"],
                "flag provided but not defined: -tls",
            ),
            (
                vec!["-addr=:1", "-rpc-timeout=soon"],
                "invalid value \"soon\"",
            ),
            (vec!["addr=:1"], "unexpected argument"),
        ] {
            let error = parse_args(&args(&given)).unwrap_err();
            assert!(error.contains(expected), "{given:?}: {error}");
        }
    }

    #[test]
    fn exit_codes_are_grpc_health_probes() {
        assert_eq!(Outcome::Serving.exit_code(), 0);
        assert_eq!(Outcome::InvalidArguments(String::new()).exit_code(), 1);
        assert_eq!(Outcome::ConnectionFailed(String::new()).exit_code(), 2);
        assert_eq!(Outcome::RpcFailed(String::new()).exit_code(), 3);
        assert_eq!(Outcome::Unhealthy(String::new()).exit_code(), 4);
    }
}
