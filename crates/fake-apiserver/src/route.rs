//! URL routing like `k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`.

use http::Method;

use crate::control::Verb;

/// Non-resource paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Discovery {
    CoreVersions,
    Groups,
    Group(String),
    Resources {
        group: String,
        version: String,
    },
    Version,
    Health,
    /// `/openapi/<rest>` (`v2`, `v3`, `v3/apis/<group>/<version>`).
    OpenApi(String),
}

/// A resource path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResourcePath {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) namespace: String,
    pub(crate) plural: String,
    pub(crate) name: String,
    pub(crate) subresource: Option<String>,
}

/// What a path addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Discovery(Discovery),
    Resource(ResourcePath),
}

const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

fn resource_path(group: &str, version: &str, rest: &[&str]) -> Option<ResourcePath> {
    let mut namespace = String::new();
    let mut rest = rest;
    if rest.first() == Some(&"namespaces") && rest.len() > 1 {
        let is_ns_subresource = rest
            .get(2)
            .is_some_and(|s| NAMESPACE_SUBRESOURCES.contains(s));
        if rest.len() > 2 && !is_ns_subresource {
            namespace = rest[1].to_string();
            rest = &rest[2..];
        }
    }
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, "", None),
        [plural, name] => (*plural, *name, None),
        [plural, name, sub] => (*plural, *name, Some((*sub).to_string())),
        _ => return None,
    };
    if plural.is_empty() {
        return None;
    }
    Some(ResourcePath {
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        plural: plural.to_string(),
        name: name.to_string(),
        subresource,
    })
}

/// Parses a request path.
pub(crate) fn parse(path: &str) -> Option<Route> {
    let parts: Vec<&str> = path
        .trim_start_matches('/')
        .trim_end_matches('/')
        .split('/')
        .collect();
    let discovery = |d| Some(Route::Discovery(d));
    match parts.as_slice() {
        ["api"] => discovery(Discovery::CoreVersions),
        ["apis"] => discovery(Discovery::Groups),
        ["apis", g] => discovery(Discovery::Group((*g).to_string())),
        ["api", v] => discovery(Discovery::Resources {
            group: String::new(),
            version: (*v).to_string(),
        }),
        ["apis", g, v] => discovery(Discovery::Resources {
            group: (*g).to_string(),
            version: (*v).to_string(),
        }),
        ["version"] => discovery(Discovery::Version),
        ["healthz" | "livez" | "readyz"] => discovery(Discovery::Health),
        ["openapi", rest @ ..] if !rest.is_empty() => discovery(Discovery::OpenApi(rest.join("/"))),
        ["api", v, rest @ ..] => resource_path("", v, rest).map(Route::Resource),
        ["apis", g, v, rest @ ..] => resource_path(g, v, rest).map(Route::Resource),
        _ => None,
    }
}

/// The verb of a resource request.
pub(crate) fn verb(method: &Method, has_name: bool, watch: bool) -> Option<Verb> {
    Some(match (method.as_str(), has_name) {
        ("GET", true) => Verb::Get,
        ("GET", false) if watch => Verb::Watch,
        ("GET", false) => Verb::List,
        ("POST", false) => Verb::Create,
        ("PUT", true) => Verb::Update,
        ("PATCH", true) => Verb::Patch,
        ("DELETE", true) => Verb::Delete,
        ("DELETE", false) => Verb::DeleteCollection,
        _ => return None,
    })
}

/// Decoded query pairs.
pub(crate) fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    query
        .map(|q| {
            form_urlencoded::parse(q.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(path: &str) -> ResourcePath {
        match parse(path) {
            Some(Route::Resource(r)) => r,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn namespaced_and_cluster_paths() {
        let r = res("/api/v1/namespaces/ns/secrets/s");
        assert_eq!(
            (r.namespace.as_str(), r.plural.as_str(), r.name.as_str()),
            ("ns", "secrets", "s")
        );
        let r = res("/apis/apps/v1/namespaces/ns/deployments/d/status");
        assert_eq!(r.subresource.as_deref(), Some("status"));
        let r = res("/api/v1/namespaces/ns");
        assert_eq!(
            (r.plural.as_str(), r.name.as_str(), r.namespace.as_str()),
            ("namespaces", "ns", "")
        );
        let r = res("/api/v1/namespaces/ns/finalize");
        assert_eq!((r.plural.as_str(), r.name.as_str()), ("namespaces", "ns"));
        assert_eq!(r.subresource.as_deref(), Some("finalize"));
        let r = res("/apis/example.com/v1/widgets");
        assert_eq!(
            (r.group.as_str(), r.plural.as_str(), r.name.as_str()),
            ("example.com", "widgets", "")
        );
    }

    #[test]
    fn discovery_paths() {
        assert_eq!(parse("/apis"), Some(Route::Discovery(Discovery::Groups)));
        assert_eq!(
            parse("/apis/apps/v1"),
            Some(Route::Discovery(Discovery::Resources {
                group: "apps".into(),
                version: "v1".into()
            }))
        );
    }

    #[test]
    fn verbs_from_method_and_shape() {
        assert_eq!(verb(&Method::GET, false, true), Some(Verb::Watch));
        assert_eq!(
            verb(&Method::DELETE, false, false),
            Some(Verb::DeleteCollection)
        );
        assert_eq!(verb(&Method::POST, true, false), None);
    }
}
