//! `spec.conversion` of a CustomResourceDefinition, as
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`
//! checks it (`validateCustomResourceConversion`, the `preserveUnknownFields` rule of
//! `validateCustomResourceDefinitionSpec`, `allowInvalidCABundle`).
//!
//! Validation runs on the internal type, so errors name its fields: `webhook.clientConfig`
//! is reported as `spec.conversion.webhookClientConfig` and `webhook.conversionReviewVersions`
//! as `spec.conversion.conversionReviewVersions`
//! (`Convert_v1_CustomResourceConversion_To_apiextensions_CustomResourceConversion`).

use base64::Engine as _;
use serde_json::{Value, json};

use super::formats::bytes_field;
use super::webhook_client::{client_config_errors, review_versions_errors};
use crate::status::{Cause, forbidden_field, invalid_rendered, invalid_value, not_supported};

const PATH: &str = "spec.conversion";
const STRATEGIES: &[&str] = &["None", "Webhook"];

/// Errors of `spec.conversion` (after defaulting); `old` is the stored CRD on update.
pub(super) fn errors(crd: &Value, old: Option<&Value>) -> Vec<Cause> {
    let Some(conversion) = crd.pointer("/spec/conversion").filter(|c| !c.is_null()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let strategy = conversion.get("strategy").cloned().unwrap_or(json!(""));
    let preserve_unknown = crd
        .pointer("/spec/preserveUnknownFields")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if strategy != json!("None") && preserve_unknown {
        out.push(invalid_value(
            &format!("{PATH}.strategy"),
            &strategy,
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    // `validateEnumStrings(..., required=true)`.
    match strategy.as_str().unwrap_or_default() {
        "" => out.push(crate::status::required(&format!("{PATH}.strategy"), "")),
        s if !STRATEGIES.contains(&s) => {
            out.push(not_supported(
                &format!("{PATH}.strategy"),
                &strategy,
                STRATEGIES,
            ));
        }
        _ => {}
    }
    let webhook = conversion.get("webhook").unwrap_or(&Value::Null);
    let client_config = webhook.get("clientConfig").filter(|c| !c.is_null());
    let versions = webhook
        .get("conversionReviewVersions")
        .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()));
    let cc_path = format!("{PATH}.webhookClientConfig");
    let versions_path = format!("{PATH}.conversionReviewVersions");
    if strategy == json!("Webhook") {
        match client_config {
            None => out.push(crate::status::required(
                &cc_path,
                "required when strategy is set to Webhook",
            )),
            Some(cc) => {
                out.extend(client_config_errors(Some(cc), &cc_path));
                let bundle = bytes_field(cc, "caBundle");
                if !bundle.is_empty() && !allow_invalid_ca_bundle(old) {
                    out.extend(ca_bundle_errors(&format!("{cc_path}.caBundle"), &bundle));
                }
            }
        }
        out.extend(review_versions_errors(
            webhook.get("conversionReviewVersions"),
            &versions_path,
            "",
        ));
    } else {
        let why = "should not be set when strategy is not set to Webhook";
        if client_config.is_some() {
            out.push(forbidden_field(&cc_path, why));
        }
        if versions.is_some() {
            out.push(forbidden_field(&versions_path, why));
        }
    }
    out
}

/// `allowInvalidCABundle`: a create, a CRD not yet `Established`, or one whose stored bundle
/// is already invalid may carry any bundle; otherwise it must hold a certificate.
fn allow_invalid_ca_bundle(old: Option<&Value>) -> bool {
    let Some(old) = old else {
        return true;
    };
    let established = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
    if !established {
        return true;
    }
    match old.pointer("/spec/conversion/webhook/clientConfig") {
        Some(cc) => {
            let bundle = bytes_field(cc, "caBundle");
            !bundle.is_empty() && root_pool_error(&bundle).is_some()
        }
        None => false,
    }
}

/// `webhook.ValidateCABundle` (`staging/src/k8s.io/apiserver/pkg/util/webhook/validation.go`):
/// the bundle must load as client-go's root pool (`transport.TLSConfigFor`).
fn ca_bundle_errors(path: &str, bundle: &[u8]) -> Vec<Cause> {
    match root_pool_error(bundle) {
        None => Vec::new(),
        Some(why) => {
            let bytes: Vec<String> = bundle.iter().map(|b| format!("0x{b:x}")).collect();
            vec![invalid_rendered(
                path,
                &format!("[]byte{{{}}}", bytes.join(", ")),
                &format!("unable to load root certificates: {why}"),
            )]
        }
    }
}

/// One PEM block (`encoding/pem.Decode`): its type, whether it has headers, its bytes.
struct PemBlock {
    label: String,
    has_headers: bool,
    der: Option<Vec<u8>>,
}

/// The PEM blocks of `data`, stopping at the first one that does not decode.
fn pem_blocks(data: &str) -> Vec<PemBlock> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + "-----BEGIN ".len()..];
        let Some((label, body)) = after.split_once("-----") else {
            break;
        };
        let end_marker = format!("-----END {label}-----");
        let Some(end) = body.find(&end_marker) else {
            break;
        };
        let inner = &body[..end];
        rest = &body[end + end_marker.len()..];
        let has_headers = inner
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .is_some_and(|l| l.contains(':'));
        let b64: String = inner
            .lines()
            .filter(|l| !l.contains(':'))
            .flat_map(|l| l.chars().filter(|c| !c.is_whitespace()))
            .collect();
        let der = base64::engine::general_purpose::STANDARD.decode(b64).ok();
        let decoded = der.is_some();
        out.push(PemBlock {
            label: label.to_string(),
            has_headers,
            der,
        });
        if !decoded {
            break;
        }
    }
    out
}

/// Why `x509.CertPool.AppendCertsFromPEM` would load nothing, worded like client-go's
/// `createErrorParsingCAData`; `None` when at least one certificate loads.
fn root_pool_error(bundle: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bundle);
    let blocks = pem_blocks(&text);
    let parses = |der: &[u8]| {
        let der = rustls_pki_types::CertificateDer::from(der);
        webpki::anchor_from_trusted_cert(&der).is_ok()
    };
    let usable = |b: &PemBlock| b.label == "CERTIFICATE" && !b.has_headers;
    if blocks
        .iter()
        .any(|b| usable(b) && b.der.as_deref().is_some_and(parses))
    {
        return None;
    }
    for b in &blocks {
        match &b.der {
            None => return Some("unable to parse bytes as PEM block".to_string()),
            Some(_) if !usable(b) => {}
            Some(_) => {
                return Some("failed to parse certificate: x509: malformed certificate".into());
            }
        }
    }
    if blocks.is_empty() && !text.trim().is_empty() {
        return Some("unable to parse bytes as PEM block".to_string());
    }
    Some("no valid certificate authority data seen".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(conversion: Value) -> Value {
        json!({"spec": {"conversion": conversion}})
    }

    fn fields(errs: Vec<Cause>) -> Vec<String> {
        errs.into_iter().map(|c| c.field).collect()
    }

    #[test]
    fn webhook_needs_client_config_and_versions() {
        let errs = errors(&crd(json!({"strategy": "Webhook"})), None);
        assert_eq!(
            fields(errs),
            [
                "spec.conversion.webhookClientConfig",
                "spec.conversion.conversionReviewVersions"
            ]
        );
        let ok = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"name": "s", "namespace": "ns", "port": 443}},
            "conversionReviewVersions": ["v1"]}});
        assert!(errors(&crd(ok), None).is_empty());
    }

    #[test]
    fn none_forbids_a_webhook() {
        let errs = errors(
            &crd(json!({"strategy": "None", "webhook": {
                "clientConfig": {"url": "https://x.example.com"},
                "conversionReviewVersions": ["v1"]}})),
            None,
        );
        assert_eq!(
            fields(errs),
            [
                "spec.conversion.webhookClientConfig",
                "spec.conversion.conversionReviewVersions"
            ]
        );
    }

    #[test]
    fn garbage_is_no_root_pool() {
        assert_eq!(
            root_pool_error(b"not a certificate").as_deref(),
            Some("unable to parse bytes as PEM block")
        );
        let bogus = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(root_pool_error(bogus).is_some());
    }
}
