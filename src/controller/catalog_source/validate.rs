//! Validate step (pure, no client): which CatalogSources opcat can serve, and the poll interval.
//!
//! As OLM (`validateSourceType` in `pkg/controller/operators/catalog/operator.go` and
//! `ReconcilerForSource` in `pkg/controller/registry/reconciler/reconciler.go`), a `grpc` source
//! with an image is read from the image (an address is then ignored) and one with only an
//! address from the registry server there. Unlike OLM, a `grpc` source with neither is not a spec
//! error but a wait: `operator-sdk run bundle` creates it so and sets the address once its
//! registry pod runs.

use std::time::Duration;

use crate::api::CatalogSourceSpec;
use crate::api::catalog_source::SourceType;
use crate::go_duration;
use crate::registry::ImageRef;
use crate::registry_grpc::client::endpoint_uri;

/// Why a `grpc` CatalogSource without image and address waits.
pub const NO_SOURCE: &str = "neither spec.image nor spec.address is set yet: waiting for one \
                             (operator-sdk run bundle sets spec.address once its registry pod \
                             runs)";

/// What opcat supports, appended to every "not supported" message.
pub const SUPPORTED: &str = "opcat serves catalogs from images and registry servers: set \
                             spec.sourceType: grpc and spec.image or spec.address; configMap \
                             catalogs are not supported";

/// Whether opcat can serve a CatalogSource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpecCheck {
    /// `sourceType: grpc` with a valid `image`.
    Image {
        /// `spec.image` as written (the key compared across reconciles).
        raw: String,
        /// The parsed reference.
        image: ImageRef,
    },
    /// `sourceType: grpc` with only a valid `address` (`HOST:PORT` of a registry server).
    Address {
        /// `spec.address` as written (trimmed).
        raw: String,
    },
    /// `sourceType: grpc` with neither `image` nor `address` yet: a wait, not an error.
    NoSource {
        /// What is missing and what sets it.
        message: String,
    },
    /// Anything else: reported as `SpecInvalidError`, never retried until the spec changes.
    Unsupported {
        /// What is wrong and what is supported.
        message: String,
    },
}

/// Checks `sourceType`, `image` and `address` the way OLM's `validateSourceType` does.
pub fn check_source(spec: &CatalogSourceSpec) -> SpecCheck {
    let unsupported = |what: String| SpecCheck::Unsupported {
        message: format!("{what}; {SUPPORTED}"),
    };
    match spec.source_type() {
        SourceType::Grpc => {
            let image = spec.image.as_deref().map(str::trim).unwrap_or_default();
            let address = spec.address.as_deref().map(str::trim).unwrap_or_default();
            match (image.is_empty(), address.is_empty()) {
                (false, _) => match image.parse::<ImageRef>() {
                    Ok(parsed) => SpecCheck::Image {
                        raw: image.to_owned(),
                        image: parsed,
                    },
                    Err(error) => SpecCheck::Unsupported {
                        message: format!("spec.image: {error}"),
                    },
                },
                (true, false) => match endpoint_uri(address) {
                    Ok(_) => SpecCheck::Address {
                        raw: address.to_owned(),
                    },
                    Err(error) => SpecCheck::Unsupported {
                        message: format!("spec.address {address:?} is not HOST:PORT: {error}"),
                    },
                },
                (true, true) => SpecCheck::NoSource {
                    message: NO_SOURCE.to_owned(),
                },
            }
        }
        SourceType::ConfigMap => unsupported(format!(
            "spec.sourceType {:?} (a ConfigMap catalog, spec.configMap) is not supported",
            spec.source_type
        )),
        SourceType::Unknown(other) => unsupported(format!("unknown spec.sourceType {other:?}")),
    }
}

/// The poll interval (`spec.updateStrategy.registryPoll.interval`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interval {
    /// Not set: the image is not polled (as OLM).
    NotSet,
    /// A valid positive duration.
    Valid(Duration),
    /// Not a Go duration (or zero): OLM polls at the default instead and reports
    /// `InvalidIntervalError`; the catalog is still served.
    Invalid {
        /// The interval used instead.
        fallback: Duration,
        /// Quotes the bad value, says why and what is used instead.
        message: String,
    },
}

impl Interval {
    /// How often to poll, if at all.
    pub fn every(&self) -> Option<Duration> {
        match self {
            Interval::NotSet => None,
            Interval::Valid(every) => Some(*every),
            Interval::Invalid { fallback, .. } => Some(*fallback),
        }
    }

    /// How often to poll, with `default` (`opcat run --poll-default`) for CatalogSources that
    /// set no interval; an interval in the spec, valid or not, always wins.
    pub fn every_or(&self, default: Option<Duration>) -> Option<Duration> {
        match self {
            Interval::NotSet => default,
            _ => self.every(),
        }
    }
}

/// Parses the raw interval; `fallback` is used when it is invalid.
pub fn check_interval(raw: Option<&str>, fallback: Duration) -> Interval {
    let Some(raw) = raw else {
        return Interval::NotSet;
    };
    let problem = match go_duration::parse(raw) {
        Ok(every) if !every.is_zero() => return Interval::Valid(every),
        Ok(_) => format!("interval {raw:?} must be greater than zero"),
        Err(error) => error.to_string(),
    };
    Interval::Invalid {
        fallback,
        message: format!(
            "spec.updateStrategy.registryPoll.interval: {problem}; polling every {} instead",
            go_format(fallback)
        ),
    }
}

/// Formats a duration the way Go prints short ones: `15m`, `1h30m`, `45s`, `1.5s`.
pub fn go_format(duration: Duration) -> String {
    let total = duration.as_secs();
    let (hours, minutes, seconds) = (total / 3600, total / 60 % 60, total % 60);
    let millis = duration.subsec_millis();
    let mut out = String::new();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    if seconds > 0 || millis > 0 || out.is_empty() {
        if millis > 0 {
            let fraction = format!("{millis:03}");
            out.push_str(&format!("{seconds}.{}s", fraction.trim_end_matches('0')));
        } else {
            out.push_str(&format!("{seconds}s"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(source_type: &str, image: Option<&str>, address: Option<&str>) -> CatalogSourceSpec {
        CatalogSourceSpec {
            source_type: source_type.to_owned(),
            image: image.map(str::to_owned),
            address: address.map(str::to_owned),
            ..CatalogSourceSpec::default()
        }
    }

    fn unsupported(spec: &CatalogSourceSpec) -> String {
        match check_source(spec) {
            SpecCheck::Unsupported { message } => message,
            other => panic!("expected unsupported, got {other:?}"),
        }
    }

    #[test]
    fn grpc_with_an_image_is_served_and_address_is_ignored() {
        let check = check_source(&spec(
            "grpc",
            Some("registry.example.com/catalogs/ops:v4"),
            Some("10.0.0.1:50051"),
        ));
        let SpecCheck::Image { raw, image } = check else {
            panic!("expected an image catalog, got {check:?}");
        };
        assert_eq!(raw, "registry.example.com/catalogs/ops:v4");
        assert_eq!(image.registry(), "registry.example.com");
    }

    #[test]
    fn an_address_alone_names_a_registry_server() {
        assert_eq!(
            check_source(&spec("grpc", None, Some(" 10.244.0.7:50051 "))),
            SpecCheck::Address {
                raw: "10.244.0.7:50051".to_owned()
            }
        );
        let bad = unsupported(&spec("grpc", None, Some("catalog.olm.svc")));
        assert!(
            bad.starts_with("spec.address \"catalog.olm.svc\" is not HOST:PORT"),
            "{bad}"
        );
    }

    #[test]
    fn neither_image_nor_address_is_a_wait_not_an_error() {
        for (image, address) in [(None, None), (Some("  "), Some(""))] {
            assert_eq!(
                check_source(&spec("grpc", image, address)),
                SpecCheck::NoSource {
                    message: NO_SOURCE.to_owned()
                }
            );
        }
    }

    #[test]
    fn unsupported_sources_say_what_is_supported() {
        let config_map = unsupported(&spec("configmap", None, None));
        assert!(config_map.contains("ConfigMap catalog"), "{config_map}");
        let internal = unsupported(&spec("internal", None, None));
        assert!(internal.contains("\"internal\""), "{internal}");
        let unknown = unsupported(&spec("http", Some("x/y:z"), None));
        assert!(
            unknown.contains("unknown spec.sourceType \"http\""),
            "{unknown}"
        );
        for message in [config_map, internal, unknown] {
            assert!(
                message.ends_with(
                    "opcat serves catalogs from images and registry servers: set \
                     spec.sourceType: grpc and spec.image or spec.address; configMap catalogs \
                     are not supported"
                ),
                "{message}"
            );
        }
    }

    #[test]
    fn an_unparsable_image_is_a_spec_error_naming_it() {
        let message = unsupported(&spec("grpc", Some("Registry/UPPER CASE"), None));
        assert!(
            message.starts_with("spec.image: \"Registry/UPPER CASE\""),
            "{message}"
        );
    }

    #[test]
    fn intervals_follow_go_durations_and_fall_back_when_invalid() {
        let fallback = Duration::from_secs(900);
        assert_eq!(check_interval(None, fallback), Interval::NotSet);
        assert_eq!(check_interval(None, fallback).every(), None);
        assert_eq!(
            check_interval(Some("1h30m"), fallback),
            Interval::Valid(Duration::from_secs(5400))
        );
        for bad in ["ten minutes", "10", "0s", "-5m"] {
            let interval = check_interval(Some(bad), fallback);
            let Interval::Invalid { message, .. } = &interval else {
                panic!("{bad:?} should be invalid, got {interval:?}");
            };
            assert!(message.contains(&format!("{bad:?}")), "{message}");
            assert!(message.ends_with("polling every 15m instead"), "{message}");
            assert_eq!(interval.every(), Some(fallback));
        }
    }

    #[test]
    fn the_poll_default_applies_only_to_catalogs_without_an_interval() {
        let fallback = Duration::from_secs(900);
        let default = Some(Duration::from_secs(1800));
        assert_eq!(check_interval(None, fallback).every_or(None), None);
        assert_eq!(check_interval(None, fallback).every_or(default), default);
        assert_eq!(
            check_interval(Some("5m"), fallback).every_or(default),
            Some(Duration::from_secs(300))
        );
        assert_eq!(
            check_interval(Some("soon"), fallback).every_or(default),
            Some(fallback),
            "an invalid interval falls back as OLM does, not to the default"
        );
    }

    #[test]
    fn durations_print_like_go() {
        assert_eq!(go_format(Duration::from_secs(900)), "15m");
        assert_eq!(go_format(Duration::from_secs(5400)), "1h30m");
        assert_eq!(go_format(Duration::from_secs(3605)), "1h5s");
        assert_eq!(go_format(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_format(Duration::ZERO), "0s");
    }
}
