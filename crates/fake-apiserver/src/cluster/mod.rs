//! The emulated cluster: storage plus the API server's request semantics (create, get, list,
//! update, patch, apply, delete, deletecollection, watch) and the controllers that react to
//! writes. Everything here runs under one lock and never awaits.

mod apply;
mod create;
mod delete;
mod meta;
mod read;
pub(crate) mod update;

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use serde_json::{Map, Value};

pub(crate) use self::delete::{DeleteOptions, Propagation};
pub(crate) use self::read::{ListParams, WatchParams};
pub(crate) use self::update::Ownership;
use crate::controllers::{ControllerConfig, Work};
use crate::ids::IdSource;
use crate::resources::{Registry, ResourceInfo};
use crate::ssa::managed::{ManagerId, Operation};
use crate::status::ApiError;
use crate::store::{ObjRef, Store};

/// The resource, version, namespace, name and subresource a request addresses.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub(crate) info: Arc<ResourceInfo>,
    pub(crate) version: String,
    /// Empty for cluster-scoped resources and all-namespace collections.
    pub(crate) namespace: String,
    /// Empty for collections.
    pub(crate) name: String,
    pub(crate) subresource: Option<String>,
}

/// Query parameters shared by writes.
#[derive(Clone, Debug, Default)]
pub(crate) struct WriteParams {
    pub(crate) field_manager: Option<String>,
    pub(crate) user_agent: Option<String>,
    pub(crate) dry_run: bool,
    pub(crate) force: bool,
}

impl WriteParams {
    /// The field manager: `fieldManager`, else the User-Agent up to its first `/`.
    fn manager(&self) -> String {
        self.field_manager.clone().unwrap_or_else(|| {
            self.user_agent
                .as_deref()
                .and_then(|ua| ua.split('/').next())
                .filter(|s| !s.is_empty())
                .unwrap_or("unknown")
                .to_string()
        })
    }

    fn manager_id(&self, target: &Target, operation: Operation) -> ManagerId {
        ManagerId {
            manager: self.manager(),
            operation,
            subresource: target.subresource.clone().unwrap_or_default(),
            api_version: target.info.api_version(&target.version),
        }
    }
}

/// A successful answer: HTTP code and JSON body.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) code: u16,
    pub(crate) body: Value,
}

pub(crate) type OpResult = Result<Reply, ApiError>;

/// How the Deployment controller reports availability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeploymentMode {
    /// No Deployment controller: status is never written.
    Disabled,
    /// Every Deployment becomes available as soon as it is observed.
    Available,
    /// Deployments report `Available=False` until the test releases them.
    HeldUntilReleased,
}

/// Storage, registered resources and controller state.
pub(crate) struct Cluster {
    pub(crate) store: Store,
    pub(crate) registry: Registry,
    pub(crate) ids: IdSource,
    pub(crate) controllers: ControllerConfig,
    /// Deployments released while in [`DeploymentMode::HeldUntilReleased`].
    pub(crate) released: HashSet<(String, String)>,
    pub(crate) work: VecDeque<Work>,
    /// Set while the work queue is being drained (controller writes do not recurse).
    pub(crate) in_controllers: bool,
    /// State of the ClusterRole aggregation controller.
    pub(crate) aggregation: crate::controllers::clusterrole_aggregation::Aggregation,
    /// Service endpoints and discovery checks of the aggregation layer.
    pub(crate) aggregator: crate::aggregator::State,
    /// RoleBindings and ClusterRoleBindings by subject, for the authorizer.
    pub(crate) bindings: crate::auth::index::BindingIndex,
}

/// `obj` as served at `version`: `apiVersion` and `kind` set.
pub(crate) fn present(info: &ResourceInfo, version: &str, obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Value::Object(m) = &mut out {
        m.insert("apiVersion".into(), info.api_version(version).into());
        m.insert("kind".into(), info.kind.clone().into());
    }
    out
}

pub(crate) fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

pub(crate) fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta(obj).and_then(|m| m.get(field)).and_then(Value::as_str)
}

/// `metadata` of `obj`, created when missing.
pub(crate) fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = Value::Object(Map::new());
    }
    match obj.get_mut("metadata") {
        Some(Value::Object(m)) => m,
        // Safe: the `if` above made `metadata` an object.
        _ => unreachable!("metadata was just made an object"),
    }
}

/// The string field `key` of an object ("" when absent or not a string); unlike a JSON
/// pointer, it allocates nothing.
pub(crate) fn field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The string at a JSON pointer ("" when absent or not a string).
pub(crate) fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The strings of a JSON list (non-strings skipped; absent is empty).
pub(crate) fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn finalizers(obj: &Value) -> Vec<String> {
    string_list(meta(obj).and_then(|m| m.get("finalizers")))
}

pub(crate) fn set_finalizers(obj: &mut Value, list: &[String]) {
    let meta = meta_mut(obj);
    if list.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert(
            "finalizers".into(),
            list.iter().cloned().map(Value::String).collect(),
        );
    }
}

pub(crate) fn is_deleting(obj: &Value) -> bool {
    meta(obj).is_some_and(|m| m.get("deletionTimestamp").is_some_and(|t| !t.is_null()))
}

impl Cluster {
    pub(crate) fn new(history_limit: usize, controllers: ControllerConfig) -> Self {
        Self {
            store: Store::new(history_limit),
            registry: Registry::with_builtins(),
            ids: IdSource::new(),
            controllers,
            released: HashSet::new(),
            work: VecDeque::new(),
            in_controllers: false,
            aggregation: Default::default(),
            aggregator: Default::default(),
            bindings: Default::default(),
        }
    }

    /// A target for the object at `r` (used by controllers).
    pub(crate) fn target_of(&self, r: &ObjRef, subresource: Option<&str>) -> Option<Target> {
        let info = self.registry.get(&r.key)?.clone();
        Some(Target {
            version: info.versions.first().cloned().unwrap_or_default(),
            info,
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            subresource: subresource.map(str::to_string),
        })
    }

    /// The stored object a named target addresses, or 404.
    fn existing(&self, t: &Target) -> Result<Arc<Value>, ApiError> {
        self.store
            .get(&t.info.key(), &t.namespace, &t.name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(t.info.group_resource(), &t.name))
    }

    fn obj_ref(t: &Target, name: &str) -> ObjRef {
        ObjRef {
            key: t.info.key(),
            namespace: t.namespace.clone(),
            name: name.to_string(),
        }
    }
}
