//! What a request asks: the resource attributes the authorizer checks (as
//! `k8s.io/apiserver/pkg/endpoints/request.RequestInfoFactory` derives them) and the media
//! type of the answer (the `Accept` header, as kubectl and client-go send it).

/// A request, classified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A PackageManifest request.
    Resource(ResourceRequest),
    /// Anything else (discovery, OpenAPI, unknown paths): authorized by path.
    NonResource {
        /// The path.
        path: String,
        /// The lower-cased HTTP method.
        verb: String,
    },
}

/// A request for `packagemanifests`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceRequest {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: String,
    /// The namespace; `None` across all namespaces.
    pub namespace: Option<String>,
    /// The object's name, when one is named.
    pub name: Option<String>,
    /// `icon`, or another (unserved) subresource.
    pub subresource: Option<String>,
}

/// Prefix of every resource path.
const PREFIX: &str = "/apis/packages.operators.coreos.com/v1/";

/// Classifies `method path` with its `watch` query parameter.
pub fn classify(method: &str, path: &str, watch_param: bool) -> Target {
    let non_resource = || Target::NonResource {
        path: path.to_owned(),
        verb: method.to_ascii_lowercase(),
    };
    let Some(rest) = path.strip_prefix(PREFIX) else {
        return non_resource();
    };
    let mut parts: Vec<&str> = rest.split('/').collect();
    let mut watch = false;
    if parts.first() == Some(&"watch") {
        watch = true;
        parts.remove(0);
    }
    let namespace = if parts.first() == Some(&"namespaces") && parts.len() >= 3 {
        let namespace = parts[1].to_owned();
        parts.drain(..2);
        Some(namespace)
    } else {
        None
    };
    if parts.first() != Some(&super::types::RESOURCE) || parts.iter().any(|p| p.is_empty()) {
        return non_resource();
    }
    let name = parts.get(1).map(|name| (*name).to_owned());
    let subresource = parts.get(2).map(|sub| (*sub).to_owned());
    if parts.len() > 3 || (namespace.is_none() && name.is_some()) {
        return non_resource();
    }
    let verb = match method {
        "GET" | "HEAD" if watch || (watch_param && name.is_none()) => "watch",
        "GET" | "HEAD" if name.is_some() => "get",
        "GET" | "HEAD" => "list",
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" if name.is_some() => "delete",
        "DELETE" => "deletecollection",
        other => {
            return Target::NonResource {
                path: path.to_owned(),
                verb: other.to_ascii_lowercase(),
            };
        }
    };
    Target::Resource(ResourceRequest {
        verb: verb.to_owned(),
        namespace,
        name,
        subresource,
    })
}

/// The form of an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// The object or list as JSON.
    Json,
    /// The object or list as YAML.
    Yaml,
    /// A `meta.k8s.io` Table of this version (`v1`, `v1beta1`).
    Table(&'static str),
    /// `PartialObjectMetadata` / `PartialObjectMetadataList` of this version.
    Metadata(&'static str),
    /// An aggregated discovery document of this version (`v2`, `v2beta1`).
    Discovery(&'static str),
}

/// The first form in `accept` the server produces; `None` when it lists only others (an
/// absent or empty header means JSON).
pub fn negotiate(accept: &str) -> Option<Form> {
    if accept.trim().is_empty() {
        return Some(Form::Json);
    }
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let mut as_ = "";
        let mut version = "";
        let mut group = "";
        for parameter in parts {
            match parameter.split_once('=') {
                Some(("as", value)) => as_ = value,
                Some(("v", value)) => version = value,
                Some(("g", value)) => group = value,
                _ => {}
            }
        }
        let json = matches!(media.as_str(), "application/json" | "application/*" | "*/*");
        let version = match version {
            "v1" => "v1",
            "v1beta1" => "v1beta1",
            "v2" => "v2",
            "v2beta1" => "v2beta1",
            _ => "",
        };
        match (as_, group) {
            ("", _) if json => return Some(Form::Json),
            ("", _) if media == "application/yaml" => return Some(Form::Yaml),
            ("Table", "meta.k8s.io") if json && !version.is_empty() => {
                return Some(Form::Table(version));
            }
            ("PartialObjectMetadata" | "PartialObjectMetadataList", "meta.k8s.io")
                if json && !version.is_empty() =>
            {
                return Some(Form::Metadata(version));
            }
            ("APIGroupDiscoveryList", "apidiscovery.k8s.io")
                if json && (version == "v2" || version == "v2beta1") =>
            {
                return Some(Form::Discovery(version));
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(verb: &str, ns: Option<&str>, name: Option<&str>, sub: Option<&str>) -> Target {
        Target::Resource(ResourceRequest {
            verb: verb.to_owned(),
            namespace: ns.map(str::to_owned),
            name: name.map(str::to_owned),
            subresource: sub.map(str::to_owned),
        })
    }

    #[test]
    fn paths_map_to_the_attributes_kubernetes_authorizes() {
        let base = "/apis/packages.operators.coreos.com/v1";
        assert_eq!(
            classify(
                "GET",
                &format!("{base}/namespaces/a/packagemanifests"),
                false
            ),
            resource("list", Some("a"), None, None)
        );
        assert_eq!(
            classify(
                "GET",
                &format!("{base}/namespaces/a/packagemanifests"),
                true
            ),
            resource("watch", Some("a"), None, None)
        );
        assert_eq!(
            classify("GET", &format!("{base}/packagemanifests"), false),
            resource("list", None, None, None)
        );
        assert_eq!(
            classify(
                "GET",
                &format!("{base}/namespaces/a/packagemanifests/etcd/icon"),
                false
            ),
            resource("get", Some("a"), Some("etcd"), Some("icon"))
        );
        assert_eq!(
            classify(
                "DELETE",
                &format!("{base}/namespaces/a/packagemanifests/etcd"),
                false
            ),
            resource("delete", Some("a"), Some("etcd"), None)
        );
        assert_eq!(
            classify("GET", base, false),
            Target::NonResource {
                path: base.to_owned(),
                verb: "get".to_owned()
            }
        );
        assert!(matches!(
            classify("GET", "/openapi/v2", false),
            Target::NonResource { .. }
        ));
    }

    #[test]
    fn accept_headers_of_kubectl_and_client_go_are_understood() {
        assert_eq!(negotiate(""), Some(Form::Json));
        assert_eq!(
            negotiate(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
            ),
            Some(Form::Table("v1"))
        );
        assert_eq!(
            negotiate("application/vnd.kubernetes.protobuf, application/json"),
            Some(Form::Json)
        );
        assert_eq!(
            negotiate("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
            Some(Form::Metadata("v1"))
        );
        assert_eq!(
            negotiate(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
            ),
            Some(Form::Discovery("v2"))
        );
        assert_eq!(negotiate("application/yaml"), Some(Form::Yaml));
        assert_eq!(negotiate("application/vnd.kubernetes.protobuf"), None);
    }
}
