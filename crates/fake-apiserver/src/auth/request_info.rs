//! The attributes a request is authorized on, derived from its URL as
//! `staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go` (`NewRequestInfo`)
//! derives them: resource requests under `/api/<v>/...` and `/apis/<g>/<v>/...` get a verb
//! (`get`/`list`/`watch` from GET and the `watch` parameter, `create`, `update`, `patch`,
//! `delete`/`deletecollection`), namespace, resource, name and subresource; everything else
//! (discovery, `/version`, `/openapi/...`, `/healthz`) is a non-resource request whose verb is
//! the lower-case HTTP method. A list or watch with `fieldSelector=metadata.name=<n>` is
//! authorized for the name `<n>` (so `resourceNames` rules cover single-object informers).

/// What RBAC looks at (`authorizer.AttributesRecord` without the user).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RequestInfo {
    pub(crate) resource_request: bool,
    pub(crate) path: String,
    pub(crate) verb: String,
    pub(crate) api_group: String,
    pub(crate) api_version: String,
    pub(crate) namespace: String,
    pub(crate) resource: String,
    pub(crate) subresource: String,
    pub(crate) name: String,
}

/// `namespaceSubresources`: `/namespaces/<ns>/status` addresses the Namespace itself.
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

fn value_of<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// `path.IsValidPathSegmentName`: not `.`/`..`, no `/` or `%`.
fn valid_path_segment(name: &str) -> bool {
    name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

/// The name a field selector pins with `metadata.name=<n>` or `==` (`RequiresExactMatch`).
fn pinned_name(selector: &str) -> Option<&str> {
    let terms: Vec<&str> = selector.split(',').map(str::trim).collect();
    let mut found = None;
    for term in terms {
        let (field, value) = if let Some((f, v)) = term.split_once("==") {
            (f, v)
        } else if term.contains("!=") {
            continue;
        } else if let Some((f, v)) = term.split_once('=') {
            (f, v)
        } else {
            continue;
        };
        if field.trim() == "metadata.name" {
            found = Some(value.trim());
        }
    }
    found
}

impl RequestInfo {
    /// The attributes of `method path?query`.
    pub(crate) fn new(method: &str, path: &str, query: &[(String, String)]) -> Self {
        let mut info = RequestInfo {
            path: path.to_string(),
            verb: method.to_ascii_lowercase(),
            ..RequestInfo::default()
        };
        let parts: Vec<&str> = path
            .trim_matches('/')
            .split('/')
            .filter(|p| !p.is_empty())
            .collect();
        let rest = match parts.as_slice() {
            ["api", version, rest @ ..] if !rest.is_empty() => {
                info.api_version = (*version).to_string();
                rest
            }
            ["apis", group, version, rest @ ..] if !rest.is_empty() => {
                info.api_group = (*group).to_string();
                info.api_version = (*version).to_string();
                rest
            }
            _ => return info,
        };
        info.resource_request = true;
        let mut rest = rest;
        let special = matches!(rest.first(), Some(&"watch" | &"proxy")) && rest.len() >= 2;
        if special {
            info.verb = rest[0].to_string();
            rest = &rest[1..];
        } else {
            info.verb = match method {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            }
            .to_string();
        }
        if rest.first() == Some(&"namespaces") && rest.len() > 1 {
            info.namespace = rest[1].to_string();
            if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
                rest = &rest[2..];
            }
        }
        if rest.len() >= 3 && info.verb != "proxy" {
            info.subresource = rest[2].to_string();
        }
        if rest.len() >= 2 {
            info.name = rest[1].to_string();
        }
        if let Some(resource) = rest.first() {
            info.resource = (*resource).to_string();
        }
        if info.name.is_empty() && info.verb == "get" {
            let watch = value_of(query, "watch")
                .is_some_and(|w| !matches!(w.to_ascii_lowercase().as_str(), "false" | "0"));
            info.verb = if watch { "watch" } else { "list" }.to_string();
            if let Some(name) = value_of(query, "fieldSelector")
                .and_then(pinned_name)
                .filter(|n| valid_path_segment(n))
            {
                info.name = name.to_string();
            }
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_string();
        }
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: &str, path: &str, query: &[(&str, &str)]) -> RequestInfo {
        let query: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        RequestInfo::new(method, path, &query)
    }

    fn summary(i: &RequestInfo) -> (bool, &str, &str, &str, &str, &str, &str) {
        (
            i.resource_request,
            i.verb.as_str(),
            i.api_group.as_str(),
            i.namespace.as_str(),
            i.resource.as_str(),
            i.name.as_str(),
            i.subresource.as_str(),
        )
    }

    /// The cases of `requestinfo_test.go` that apply to a JSON-only server.
    #[test]
    fn resource_requests_follow_request_info_factory() {
        let cases = [
            (
                ("GET", "/api/v1/namespaces", &[][..]),
                (true, "list", "", "", "namespaces", "", ""),
            ),
            (
                ("GET", "/api/v1/namespaces/other", &[]),
                (true, "get", "", "other", "namespaces", "other", ""),
            ),
            (
                ("GET", "/api/v1/namespaces/other/pods", &[]),
                (true, "list", "", "other", "pods", "", ""),
            ),
            (
                ("GET", "/api/v1/namespaces/other/pods/foo", &[]),
                (true, "get", "", "other", "pods", "foo", ""),
            ),
            (
                ("GET", "/api/v1/pods", &[("watch", "true")]),
                (true, "watch", "", "", "pods", "", ""),
            ),
            (
                ("GET", "/api/v1/pods", &[("watch", "false")]),
                (true, "list", "", "", "pods", "", ""),
            ),
            (
                ("GET", "/api/v1/watch/pods", &[]),
                (true, "watch", "", "", "pods", "", ""),
            ),
            (
                (
                    "GET",
                    "/api/v1/namespaces/other/pods",
                    &[("fieldSelector", "metadata.name=foo")],
                ),
                (true, "list", "", "other", "pods", "foo", ""),
            ),
            (
                ("POST", "/api/v1/namespaces/other/pods", &[]),
                (true, "create", "", "other", "pods", "", ""),
            ),
            (
                ("PUT", "/api/v1/namespaces/other/finalize", &[]),
                (
                    true,
                    "update",
                    "",
                    "other",
                    "namespaces",
                    "other",
                    "finalize",
                ),
            ),
            (
                (
                    "PATCH",
                    "/apis/apps/v1/namespaces/a/deployments/d/status",
                    &[],
                ),
                (true, "patch", "apps", "a", "deployments", "d", "status"),
            ),
            (
                ("DELETE", "/api/v1/namespaces/other/pods", &[]),
                (true, "deletecollection", "", "other", "pods", "", ""),
            ),
            (
                ("DELETE", "/api/v1/namespaces/other/pods/foo", &[]),
                (true, "delete", "", "other", "pods", "foo", ""),
            ),
            (
                ("GET", "/api/v1/namespaces/other/pods/foo/proxy/a/b", &[]),
                (true, "get", "", "other", "pods", "foo", "proxy"),
            ),
        ];
        for ((method, path, query), want) in cases {
            assert_eq!(summary(&info(method, path, query)), want, "{method} {path}");
        }
    }

    #[test]
    fn discovery_and_other_paths_are_non_resource_requests() {
        for path in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/apps",
            "/apis/apps/v1",
            "/version",
            "/openapi/v3",
        ] {
            let i = info("GET", path, &[]);
            assert!(!i.resource_request, "{path}");
            assert_eq!((i.verb.as_str(), i.path.as_str()), ("get", path));
        }
        assert_eq!(info("POST", "/healthz", &[]).verb, "post");
    }
}
