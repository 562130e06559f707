//! What admission webhooks and CRD conversion webhooks share: the client configuration
//! (`staging/src/k8s.io/apiserver/pkg/util/webhook/validation.go`: `ValidateWebhookURL`,
//! `ValidateWebhookService`) and the list of review versions
//! (`validateAdmissionReviewVersions` in `pkg/apis/admissionregistration/validation/validation.go`,
//! `validateConversionReviewVersions` in `apiextensions-apiserver/.../validation/validation.go`).

use serde_json::{Value, json};

use super::{dns1035_msgs, subdomain_msgs};
use crate::status::{Cause, go_slice, invalid_rendered, invalid_value, required};

/// The review versions this server understands (`v1` and `v1beta1`, sorted as `sets.List()`).
pub(super) const ACCEPTED_REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];

const URL_FORM: &str = "; desired format: https://host[/path]";

fn present<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

/// Strings of a JSON list (`[]` when absent).
pub(super) fn strings(v: Option<&Value>) -> Vec<Value> {
    v.and_then(Value::as_array).cloned().unwrap_or_default()
}

/// `exactly one of url or service` and the checks of the one given, at `path`
/// (`clientConfig` of a webhook, `webhookClientConfig` of a CRD conversion).
pub(super) fn client_config_errors(cc: Option<&Value>, path: &str) -> Vec<Cause> {
    let cc = cc.unwrap_or(&Value::Null);
    match (present(cc, "url"), present(cc, "service")) {
        (Some(url), None) => url_errors(&format!("{path}.url"), url.as_str().unwrap_or_default()),
        (None, Some(service)) => service_errors(&format!("{path}.service"), service),
        _ => vec![required(path, "exactly one of url or service is required")],
    }
}

/// The parts of Go's `url.Parse` result that `ValidateWebhookURL` looks at.
struct ParsedUrl<'a> {
    scheme: String,
    user: Option<&'a str>,
    host: &'a str,
    query: &'a str,
    fragment: &'a str,
}

/// A reduced `net/url.Parse`: fragment, query, scheme and authority are split the same way;
/// of its parse errors only control characters, a missing scheme before `:` and a
/// non-numeric port are reported.
fn parse_url(raw: &str) -> Result<ParsedUrl<'_>, String> {
    let fail = |why: &str| Err(format!("parse {raw:?}: {why}"));
    let (rest, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    if rest.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return fail("net/url: invalid control character in URL");
    }
    let (scheme, rest) = match rest.find(':') {
        Some(0) => return fail("missing protocol scheme"),
        Some(i)
            if rest.as_bytes()[0].is_ascii_alphabetic()
                && rest[..i]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')) =>
        {
            (rest[..i].to_ascii_lowercase(), &rest[i + 1..])
        }
        _ => (String::new(), rest),
    };
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (user, host) = match rest.strip_prefix("//") {
        Some(after) => {
            let authority = after.split('/').next().unwrap_or_default();
            match authority.rsplit_once('@') {
                Some((user, host)) => (Some(user), host),
                None => (None, authority),
            }
        }
        None => (None, ""),
    };
    if let Some((_, port)) = host.rsplit_once(':').filter(|_| !host.ends_with(']'))
        && !port.bytes().all(|b| b.is_ascii_digit())
    {
        return fail(&format!("invalid port \":{port}\" after host"));
    }
    Ok(ParsedUrl {
        scheme,
        user,
        host,
        query,
        fragment,
    })
}

/// `ValidateWebhookURL(fldPath, URL, forceHttps=true)`.
fn url_errors(path: &str, raw: &str) -> Vec<Cause> {
    let u = match parse_url(raw) {
        Ok(u) => u,
        Err(e) => {
            return vec![required(
                path,
                &format!("url must be a valid URL: {e}{URL_FORM}"),
            )];
        }
    };
    let mut out = Vec::new();
    if u.scheme != "https" {
        out.push(invalid_value(
            path,
            &json!(u.scheme),
            &format!("'https' is the only allowed URL scheme{URL_FORM}"),
        ));
    }
    if u.host.is_empty() {
        out.push(invalid_value(
            path,
            &json!(u.host),
            &format!("host must be provided{URL_FORM}"),
        ));
    }
    if let Some(user) = u.user {
        out.push(invalid_value(
            path,
            &json!(user),
            "user information is not permitted in the URL",
        ));
    }
    if !u.fragment.is_empty() {
        out.push(invalid_value(
            path,
            &json!(u.fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if !u.query.is_empty() {
        out.push(invalid_value(
            path,
            &json!(u.query),
            "query parameters are not permitted in the URL",
        ));
    }
    out
}

/// `ValidateWebhookService(fldPath, namespace, name, path, port)`. Its callers (webhook
/// configurations and CRD conversion alike) pass `Service.Name` as `namespace` and
/// `Service.Namespace` as `name`, so a missing name is reported at `.namespace` and a missing
/// namespace at `.name`; the real server does the same, so this does too.
fn service_errors(path: &str, service: &Value) -> Vec<Cause> {
    let text = |k: &str| service.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut out = Vec::new();
    if text("namespace").is_empty() {
        out.push(required(&format!("{path}.name"), ""));
    }
    if text("name").is_empty() {
        out.push(required(&format!("{path}.namespace"), ""));
    }
    // The port is defaulted to 443 before validation, so absent means 443.
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
    if !(1..=65535).contains(&port) {
        out.push(invalid_value(
            &format!("{path}.port"),
            &json!(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = service.get("path").and_then(Value::as_str) else {
        return out;
    };
    let field = format!("{path}.path");
    let bad = |detail: &str| invalid_value(&field, &json!(url_path), detail);
    if url_path == "/" || url_path.is_empty() {
        return out;
    }
    if url_path == "//" {
        out.push(bad("segment[0] may not be empty"));
        return out;
    }
    if !url_path.starts_with('/') {
        out.push(bad("must start with a '/'"));
    }
    // Go slices off the first byte whatever it is, then one trailing '/'.
    let mut to_check = url_path.get(1..).unwrap_or_default();
    to_check = to_check.strip_suffix('/').unwrap_or(to_check);
    for (i, step) in to_check.split('/').enumerate() {
        if step.is_empty() {
            out.push(bad(&format!("segment[{i}] may not be empty")));
            continue;
        }
        for failure in subdomain_msgs(step) {
            out.push(bad(&format!("segment[{i}]: {failure}")));
        }
    }
    out
}

/// Review versions: required, no duplicates, each a DNS-1035 label, at least one known.
/// `required_detail` is the message of an empty list (admission webhooks name the versions,
/// conversion webhooks say nothing).
pub(super) fn review_versions_errors(
    versions: Option<&Value>,
    path: &str,
    required_detail: &str,
) -> Vec<Cause> {
    let list = strings(versions);
    if list.is_empty() {
        return vec![required(path, required_detail)];
    }
    let mut out = Vec::new();
    let mut seen = Vec::new();
    let mut accepted = false;
    for (i, v) in list.iter().enumerate() {
        let s = v.as_str().unwrap_or_default();
        let item = format!("{path}[{i}]");
        if seen.contains(&s) {
            out.push(invalid_value(&item, v, "duplicate version"));
            continue;
        }
        seen.push(s);
        for msg in dns1035_msgs(s) {
            out.push(invalid_value(&item, v, &msg));
        }
        accepted |= ACCEPTED_REVIEW_VERSIONS.contains(&s);
    }
    if !accepted {
        out.push(invalid_rendered(
            path,
            &go_slice("string", &list),
            &format!(
                "must include at least one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_needs_https_and_a_host() {
        assert!(url_errors("u", "https://hooks.example.com/validate").is_empty());
        let errs = url_errors("u", "http://user@/x?y=1#z");
        let details: Vec<&str> = errs.iter().map(|c| c.message.as_str()).collect();
        assert_eq!(errs.len(), 5, "{details:?}");
        assert!(details[0].starts_with("Invalid value: \"http\": 'https' is the only"));
    }

    #[test]
    fn service_path_segments_are_subdomains() {
        let svc = json!({"name": "s", "namespace": "ns", "path": "/validate-Widget"});
        let errs = service_errors("svc", &svc);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "svc.path");
        assert!(
            errs[0]
                .message
                .contains("segment[0]: a lowercase RFC 1123 subdomain")
        );
        let svc = json!({"name": "s", "namespace": "ns", "path": "validate//x/"});
        let fields: Vec<String> = service_errors("svc", &svc)
            .into_iter()
            .map(|c| c.message)
            .collect();
        assert_eq!(fields.len(), 2, "{fields:?}");
    }

    #[test]
    fn review_versions_need_a_known_one() {
        assert!(review_versions_errors(Some(&json!(["v1"])), "v", "x").is_empty());
        let errs = review_versions_errors(Some(&json!(["v2", "v2"])), "v", "x");
        assert_eq!(errs[0].message, "Invalid value: \"v2\": duplicate version");
        assert_eq!(
            errs[1].message,
            "Invalid value: []string{\"v2\", \"v2\"}: must include at least one of v1, v1beta1"
        );
    }
}
