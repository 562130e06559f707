//! Test control: request counting, injected failures and added latency.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// A Kubernetes API verb, as audit logs and RBAC name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    /// GET of one object, and discovery/version requests.
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH of any type, server-side apply included.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
}

impl Verb {
    /// True for the verbs that change objects.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection
        )
    }

    /// The lower-case name (`deletecollection`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one request addressed (for counting and fault matching).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestKey {
    /// The verb.
    pub verb: Verb,
    /// API group ("" for core); empty for non-resource requests too.
    pub group: String,
    /// Plural resource name (`secrets`); empty for discovery and `/version`.
    pub resource: String,
    /// `status`, `finalize`, or empty.
    pub subresource: String,
}

impl RequestKey {
    /// Matches `resource` given as `secrets` (any group) or `deployments.apps`.
    fn is_resource(&self, resource: &str) -> bool {
        match resource.split_once('.') {
            Some((plural, group)) => self.resource == plural && self.group == group,
            None => self.resource == resource,
        }
    }
}

/// Requests counted by verb, resource and subresource since the last reset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestCounts {
    counts: BTreeMap<RequestKey, u64>,
}

impl RequestCounts {
    pub(crate) fn record(&mut self, key: RequestKey) {
        *self.counts.entry(key).or_default() += 1;
    }

    /// Requests with `verb` on `resource` (`secrets` or `deployments.apps`), any subresource.
    pub fn get(&self, verb: Verb, resource: &str) -> u64 {
        self.sum(|k| k.verb == verb && k.is_resource(resource))
    }

    /// Requests with `verb` on `resource`'s `subresource` (`""` for the main resource).
    pub fn get_subresource(&self, verb: Verb, resource: &str, subresource: &str) -> u64 {
        self.sum(|k| k.verb == verb && k.is_resource(resource) && k.subresource == subresource)
    }

    /// Create, update, patch, delete and deletecollection requests on any resource.
    pub fn writes(&self) -> u64 {
        self.sum(|k| k.verb.is_write())
    }

    /// Write requests on `resource`.
    pub fn writes_to(&self, resource: &str) -> u64 {
        self.sum(|k| k.verb.is_write() && k.is_resource(resource))
    }

    /// Every request.
    pub fn total(&self) -> u64 {
        self.sum(|_| true)
    }

    /// All counters, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&RequestKey, u64)> {
        self.counts.iter().map(|(k, v)| (k, *v))
    }

    fn sum(&self, pred: impl Fn(&RequestKey) -> bool) -> u64 {
        self.counts
            .iter()
            .filter(|(k, _)| pred(k))
            .map(|(_, v)| v)
            .sum()
    }
}

impl fmt::Display for RequestCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, v) in &self.counts {
            let sub = if k.subresource.is_empty() {
                String::new()
            } else {
                format!("/{}", k.subresource)
            };
            writeln!(f, "{} {}{sub}: {v}", k.verb, k.resource)?;
        }
        Ok(())
    }
}

/// A failure to inject: the next `times` requests that match get `status` instead of being
/// served. Empty matchers match everything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// Only requests with this verb.
    pub verb: Option<Verb>,
    /// Only requests on this resource (`secrets`, or `deployments.apps`).
    pub resource: Option<String>,
    /// Only requests naming this object.
    pub name: Option<String>,
    /// HTTP status code to answer with (a `Status` body with the matching reason).
    pub status: u16,
    /// How many matching requests fail.
    pub times: usize,
}

impl Fault {
    /// Fails the next matching request with `status`.
    pub fn new(status: u16) -> Self {
        Self {
            verb: None,
            resource: None,
            name: None,
            status,
            times: 1,
        }
    }

    /// Only requests with `verb`.
    pub fn verb(mut self, verb: Verb) -> Self {
        self.verb = Some(verb);
        self
    }

    /// Only requests on `resource`.
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }

    /// Only requests naming `name`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Fail `times` matching requests.
    pub fn times(mut self, times: usize) -> Self {
        self.times = times;
        self
    }

    fn matches(&self, key: &RequestKey, name: &str) -> bool {
        self.verb.is_none_or(|v| v == key.verb)
            && self.resource.as_deref().is_none_or(|r| key.is_resource(r))
            && self.name.as_deref().is_none_or(|n| n == name)
    }
}

/// A list or watch request of a tagged client: which collection it asked to see, and how
/// narrowly (see [`crate::FakeApiServer::collection_reads_of`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CollectionRead {
    /// [`Verb::List`] or [`Verb::Watch`].
    pub verb: Verb,
    /// API group ("" for core).
    pub group: String,
    /// Plural resource name.
    pub resource: String,
    /// The namespace, or "" for all namespaces.
    pub namespace: String,
    /// The `labelSelector` parameter as sent ("" when absent).
    pub label_selector: String,
    /// The `fieldSelector` parameter as sent ("" when absent).
    pub field_selector: String,
}

/// One request as the server received it, in the request log
/// ([`crate::FakeApiServer::request_log`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedRequest {
    /// Verb, group, resource and subresource.
    pub key: RequestKey,
    /// The namespace in the path ("" for cluster-scoped and all-namespace requests).
    pub namespace: String,
    /// The object's name ("" for collections and discovery).
    pub name: String,
    /// The client's tag ([`crate::FakeApiServer::client_as`]), if any.
    pub agent: Option<String>,
    /// The `User-Agent` header, if any.
    pub user_agent: Option<String>,
}

impl LoggedRequest {
    /// `verb resource[/subresource] [namespace/]name`, for assertion messages.
    pub fn describe(&self) -> String {
        let mut text = format!("{} {}", self.key.verb, self.key.resource);
        if !self.key.subresource.is_empty() {
            text.push('/');
            text.push_str(&self.key.subresource);
        }
        match (self.namespace.is_empty(), self.name.is_empty()) {
            (false, false) => text.push_str(&format!(" {}/{}", self.namespace, self.name)),
            (false, true) => text.push_str(&format!(" in {}", self.namespace)),
            (true, false) => text.push_str(&format!(" {}", self.name)),
            (true, true) => {}
        }
        text
    }
}

/// What [`Control::admit`] records about a request besides its key.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Origin<'a> {
    pub(crate) namespace: &'a str,
    pub(crate) name: &'a str,
    pub(crate) agent: Option<&'a str>,
    pub(crate) user_agent: Option<&'a str>,
}

/// Mutable test controls.
#[derive(Debug, Default)]
pub(crate) struct Control {
    pub(crate) counts: RequestCounts,
    /// Every request since the last reset, in arrival order.
    pub(crate) log: Vec<LoggedRequest>,
    /// Requests of each tagged client since the start (never reset).
    pub(crate) by_agent: BTreeMap<String, RequestCounts>,
    /// Distinct list/watch requests of each tagged client since the start (never reset).
    pub(crate) reads_by_agent: BTreeMap<String, std::collections::BTreeSet<CollectionRead>>,
    /// Every request, in arrival order, of each tagged client whose log was asked for
    /// ([`crate::FakeApiServer::keep_log_of`]) since it was asked for (never reset).
    pub(crate) log_by_agent: BTreeMap<String, Vec<LoggedRequest>>,
    pub(crate) faults: Vec<Fault>,
    pub(crate) latency: Duration,
}

impl Control {
    /// Records the request; returns the status of a matching fault (consuming one use).
    pub(crate) fn admit(&mut self, key: &RequestKey, origin: Origin<'_>) -> Option<u16> {
        let Origin {
            namespace,
            name,
            agent,
            user_agent,
        } = origin;
        self.counts.record(key.clone());
        let logged = LoggedRequest {
            key: key.clone(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            agent: agent.map(str::to_owned),
            user_agent: user_agent.map(str::to_owned),
        };
        if let Some(kept) = agent.and_then(|agent| self.log_by_agent.get_mut(agent)) {
            kept.push(logged.clone());
        }
        self.log.push(logged);
        if let Some(agent) = agent {
            self.by_agent
                .entry(agent.to_owned())
                .or_default()
                .record(key.clone());
        }
        let fault = self
            .faults
            .iter_mut()
            .find(|f| f.times > 0 && f.matches(key, name))?;
        fault.times -= 1;
        let status = fault.status;
        self.faults.retain(|f| f.times > 0);
        Some(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(verb: Verb, group: &str, resource: &str) -> RequestKey {
        RequestKey {
            verb,
            group: group.into(),
            resource: resource.into(),
            subresource: String::new(),
        }
    }

    fn named(name: &str) -> Origin<'_> {
        Origin {
            name,
            ..Origin::default()
        }
    }

    #[test]
    fn faults_match_and_run_out() {
        let mut c = Control::default();
        c.faults.push(
            Fault::new(500)
                .verb(Verb::Patch)
                .resource("secrets")
                .times(2),
        );
        assert_eq!(c.admit(&key(Verb::Get, "", "secrets"), named("a")), None);
        assert_eq!(
            c.admit(&key(Verb::Patch, "", "secrets"), named("a")),
            Some(500)
        );
        assert_eq!(
            c.admit(&key(Verb::Patch, "", "secrets"), named("b")),
            Some(500)
        );
        assert_eq!(c.admit(&key(Verb::Patch, "", "secrets"), named("c")), None);
        assert_eq!(c.counts.get(Verb::Patch, "secrets"), 3);
        assert_eq!(c.counts.writes(), 3);
        let names: Vec<&str> = c.log.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            ["a", "a", "b", "c"],
            "every request is logged, failed or not"
        );
    }

    #[test]
    fn an_agents_log_is_kept_only_when_asked_for() {
        let mut c = Control::default();
        let as_agent = |agent, name| Origin {
            name,
            agent: Some(agent),
            ..Origin::default()
        };
        c.admit(&key(Verb::Get, "", "secrets"), as_agent("opcat", "before"));
        c.log_by_agent.insert("opcat".into(), Vec::new());
        c.admit(&key(Verb::Get, "", "secrets"), as_agent("opcat", "a"));
        c.admit(&key(Verb::Get, "", "secrets"), as_agent("other", "b"));
        c.admit(&key(Verb::Patch, "", "secrets"), as_agent("opcat", "c"));
        c.log.clear();
        let kept: Vec<&str> = c.log_by_agent["opcat"]
            .iter()
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(kept, ["a", "c"], "from when it was asked for, not reset");
        assert!(!c.log_by_agent.contains_key("other"));
    }

    #[test]
    fn qualified_resources_match_the_group() {
        let k = key(Verb::Create, "apps", "deployments");
        assert!(k.is_resource("deployments"));
        assert!(k.is_resource("deployments.apps"));
        assert!(!k.is_resource("deployments.extensions"));
    }
}
