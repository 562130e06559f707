//! An in-memory Kubernetes API server for opcat's tests. Test-only: it is a dev-dependency
//! and never linked into the `opcat` binary.
//!
//! It serves the real `kube::Client` — in-process as a tower `Service`
//! ([`FakeApiServer::client`]) or over HTTP on 127.0.0.1 with a kubeconfig
//! ([`FakeApiServer::serve_http`]) — so reconcilers, `kube::runtime::watcher` and
//! `kube::runtime::Controller` run unmodified against it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use fake_apiserver::{DeploymentMode, FakeApiServer, Fault, Verb};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, ObjectMeta, PostParams};
//!
//! // In-process: a real kube::Client over a tower Service.
//! let server = FakeApiServer::builder()
//!     .deployment_mode(DeploymentMode::HeldUntilReleased)
//!     .build();
//! let api: Api<ConfigMap> = Api::default_namespaced(server.client());
//! let cm = ConfigMap {
//!     metadata: ObjectMeta { name: Some("settings".into()), ..ObjectMeta::default() },
//!     ..ConfigMap::default()
//! };
//! api.create(&PostParams::default(), &cm).await?;
//!
//! // Test controls: fail the next patch of a ConfigMap, then count requests.
//! server.inject_failure(Fault::new(503).verb(Verb::Patch).resource("configmaps"));
//! server.reset_counts();
//! // ... run a reconciler to a fixed point, then:
//! assert_eq!(server.request_counts().writes(), 0, "steady state makes no writes");
//! let stored: Option<ConfigMap> = server.get("default", "settings"); // not counted
//! # let _ = stored;
//!
//! // Over HTTP, for another process (e.g. the opcat binary with KUBECONFIG set).
//! let http = server.serve_http().await?;
//! let kubeconfig = kube::config::Kubeconfig::read_from(http.kubeconfig_path())?;
//! let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
//! let _over_http = kube::Client::try_from(config)?;
//! # Ok(()) }
//! ```
//!
//! # What it emulates
//!
//! * **Authentication** (module `auth`): `Authorization: Bearer <token>`
//!   from a token table — users ([`Builder::user_token`]) and ServiceAccounts
//!   ([`FakeApiServer::service_account_token`], dead once their ServiceAccount is gone); an
//!   unknown token is 401. A request without credentials is `system:admin`
//!   (`system:masters`), so clients from [`FakeApiServer::client`] may do anything.
//!   [`FakeApiServer::client_with_token`] and [`HttpHandle::kubeconfig_with_token`] act as a
//!   token's user (`endpoints/filters/authentication.go`, `request/bearertoken`).
//! * **Authorization**: every request, discovery and non-resource URLs included, is
//!   authorized with Kubernetes' RBAC over the stored Roles, ClusterRoles and bindings
//!   (`plugin/pkg/auth/authorizer/rbac/rbac.go`, `pkg/registry/rbac/validation/rule.go`), on
//!   the attributes `RequestInfoFactory` derives from the URL (`endpoints/request/requestinfo.go`);
//!   `system:masters` is allowed before any rule is read; a denial is 403 worded as
//!   `responsewriters.Forbidden` words it. Writes of Roles, ClusterRoles and bindings that
//!   would grant more than the writer holds are refused unless it may `escalate` or `bind`
//!   (`pkg/registry/rbac/*/policybased`).
//! * **Reviews**: SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview,
//!   SelfSubjectRulesReview (`authorization.k8s.io/v1`), TokenReview and SelfSubjectReview
//!   (`authentication.k8s.io/v1`), answered by the same authorizer and token table.
//! * **API aggregation** (module `aggregator`, kube-aggregator's `handler_proxy.go`): an
//!   APIService with `spec.service` is served by proxying `/apis/<group>/<version>/...` to the
//!   endpoint [`FakeApiServer::set_service_endpoint`] gives its Service — after the caller is
//!   authenticated and authorized — over TLS verifying `caBundle` for
//!   `<service>.<namespace>.svc`, with the front-proxy client certificate
//!   ([`FakeApiServer::front_proxy`]) and `X-Remote-User`/`-Group`/`-Extra-*`; 503 when it is
//!   unavailable or unreachable. Its availability comes from a real discovery request
//!   (`remote_available_controller.go`), repeated every
//!   [`Builder::apiservice_probe_interval`]; discovery and `/openapi/v2`, `/openapi/v3` include
//!   the backends'. The front-proxy settings are published in
//!   `kube-system/extension-apiserver-authentication`.
//! * **Default RBAC** (`bootstrappolicy/policy.go`): ClusterRoles `cluster-admin`, `admin`,
//!   `edit`, `view` (aggregated), `system:aggregate-to-{admin,edit,view}`, `system:discovery`,
//!   `system:basic-user`, `system:public-info-viewer`, `system:auth-delegator`, their
//!   bindings, and Role `kube-system/extension-apiserver-authentication-reader`.
//! * **Resources**: Namespace, Secret, ServiceAccount, ConfigMap, Service, Event (core and
//!   `events.k8s.io`), Deployment, Role, RoleBinding, ClusterRole, ClusterRoleBinding, Lease,
//!   CustomResourceDefinition (with `spec.conversion` defaulted and validated),
//!   ValidatingWebhookConfiguration and MutatingWebhookConfiguration
//!   (`admissionregistration.k8s.io/v1`), APIService (`apiregistration.k8s.io/v1`, with
//!   `status`), and every kind a CRD defines (served as soon as the CRD is created, with its
//!   schema's list types, `status` subresource, pruning and defaults).
//! * **Discovery**: `/api`, `/apis`, group and group-version documents, aggregated discovery
//!   v2, `/version`, `/healthz`.
//! * **Verbs**: create (`generateName`), get, list (label selectors `=`, `==`, `!=`, `in`,
//!   `notin`, exists, `!`; field selectors per resource; `limit`/`continue`), update, patch
//!   (JSON patch with `test`, merge patch, strategic merge patch for builtin kinds, server-side
//!   apply), delete (preconditions, propagation policies), deletecollection, watch; `dryRun=All`.
//! * **Metadata-only answers** (`Accept: application/json;as=PartialObjectMetadata...`): get,
//!   list and watch return `PartialObjectMetadata` objects.
//! * **Metadata**: a cluster-wide `resourceVersion` that increases on every write; 409 on a
//!   stale `resourceVersion`; `uid`, `creationTimestamp`, `generation` (bumped when anything
//!   but metadata and status changes, for Deployments, CRDs and custom resources);
//!   `managedFields` for every write; no-op writes do not bump `resourceVersion`.
//! * **Status subresource**: writes to the main resource keep the stored `status`, writes
//!   to `/status` change only `status`.
//! * **Finalizers**: delete sets `deletionTimestamp` and `deletionGracePeriodSeconds` while
//!   finalizers remain; the object goes when the last one is removed; no new finalizers on an
//!   object being deleted (422).
//! * **Watch**: from a `resourceVersion` (replaying retained events), or from "now" with the
//!   current state as ADDED events (`resourceVersion` unset or `0`, or `sendInitialEvents`
//!   with its `k8s.io/initial-events-end` bookmark); label/field selectors with the watch
//!   cache's ADDED/DELETED on entering/leaving the selection; periodic BOOKMARKs; 410 Gone as
//!   an ERROR event for versions older than the retained window ([`Builder::watch_history`]);
//!   `timeoutSeconds`.
//! * **Validation** opcat can trip over: object names, label keys and values, annotation
//!   size, finalizer names, owner references, Secret types (`.dockerconfigjson` must be JSON)
//!   and immutability, Deployment selectors, webhook configurations (names, rules, side
//!   effects, review versions, client config, timeouts, selectors), APIServices (name,
//!   group/version, priorities, TLS settings) and CRD conversion (strategy, webhook client
//!   config, review versions, `caBundle` once the CRD is established). Builtin defaults are
//!   applied (Secret `type`, `stringData` folded into `data`, Deployment and PodSpec defaults,
//!   Service port defaults, webhook and APIService defaults, CRD names and conversion).
//!
//! # Emulated controllers (each switchable on the [`Builder`])
//!
//! | controller | switch | behaviour |
//! |---|---|---|
//! | namespace lifecycle | [`Builder::namespace_lifecycle`] | create in a missing namespace: 404; in a terminating one: 403; deleting a Namespace marks it `Terminating`, deletes its contents, then removes it |
//! | ServiceAccount | [`Builder::service_account_controller`] | a `default` ServiceAccount in every active namespace |
//! | Deployment | [`Builder::deployment_mode`] | status `observedGeneration`, replica counts, `Available`/`Progressing`; at once, or held unavailable until [`FakeApiServer::release_deployment`] |
//! | CRD | [`Builder::crd_controller`] | `NamesAccepted`/`Established`, the `customresourcecleanup` finalizer, instances deleted with the CRD |
//! | APIService availability | [`Builder::apiservice_controller`] | `Available` of a remote APIService: `ServiceNotFound`, `ServicePortError`, `EndpointsNotFound` (Service without selector), `MissingEndpoints` (no ready Deployment matches the selector); with an endpoint set, `FailedDiscoveryCheck` or `Passed` from a real `GET /apis/<group>/<version>` on the backend, else `Passed`; local ones are `Available` (`Local`) from create on |
//! | ClusterRole aggregation | [`Builder::clusterrole_aggregation`] | a ClusterRole with an `aggregationRule` gets the rules of the ClusterRoles its selectors match, applied as `clusterrole-aggregation-controller` (`pkg/controller/clusterroleaggregation`) |
//! | garbage collector | [`Builder::garbage_collector`] | background deletion of dependents whose owners are all gone (cross-namespace owners count as absent), dangling references removed when another owner remains, `foregroundDeletion` and `orphan` |
//!
//! Controllers run synchronously right after each write (their writes are not counted as
//! requests). Their effects are visible as soon as the client's call returns and appear as
//! separate watch events with their own `resourceVersion`s.
//!
//! # Server-side apply: what is not implemented
//!
//! Apply merges, owns fields per manager and operation (`Apply`/`Update`, per subresource),
//! conflicts (409 with one `FieldManagerConflict` cause per field), honours `force`, prunes
//! fields a manager stops applying unless another manager owns them, merges `listType=map`
//! lists by key and `listType=set` lists by value, replaces atomic lists and maps whole, and
//! lets Update/Patch/Create take ownership of what they change. Not implemented:
//!
//! * Builtin kinds are described only where list/map semantics matter (object metadata,
//!   PodSpec lists, ServiceAccount, Service ports, conditions, RBAC, CRD). Elsewhere objects
//!   are granular structs and lists are atomic; fields missing from the real schema are
//!   accepted instead of rejected ("field not declared in schema").
//! * No version conversion of managed fields: every version of a CRD shares one schema (the
//!   storage version's) and objects are served unconverted, even with `conversion: Webhook`.
//! * The cap of 10 `Update` entries (merged into `ancient-changes`) and the upgrade path from
//!   kubectl's `last-applied-configuration` annotation.
//! * Unions (`+unionDiscriminator`) and `fieldValidation=Strict|Warn` (nothing is reported).
//! * Reset fields are approximated per subresource: the main resource never changes
//!   `status`, `/status` never changes anything else.
//! * Duplicate keys in a stored associative list are tolerated (the first item wins); in an
//!   applied configuration they are rejected with 422, as upstream.
//!
//! # Other differences from a real API server
//!
//! * Admission webhooks and conversion webhooks are stored and validated but never called.
//! * An APIService whose Service has no endpoint ([`FakeApiServer::set_service_endpoint`])
//!   is judged by the emulated Service and Deployment checks alone, without a discovery
//!   request; the aggregator serves no OpenAPI for local resources and fetches the backends'
//!   documents on every request; its 503 bodies are `Status` objects (see module
//!   `aggregator`).
//! * Authentication knows bearer tokens only (no client certificates, OIDC, impersonation or
//!   anonymous requests); only the RBAC and privileged-group authorizers run (no Node
//!   authorizer, no webhook authorizer).
//! * Webhook `matchConditions` expressions are not compiled as CEL; updates of webhook
//!   configurations are held to the create rules (upstream relaxes them only for objects
//!   stored before a rule existed).
//! * Custom resources are pruned and defaulted by their structural schema but not validated
//!   against it (types, `required`, `enum`, patterns, CEL rules).
//! * Pods and ReplicaSets are not emulated: the Deployment controller only writes status.
//! * `events.k8s.io` and core Events are stored separately (upstream they share storage).
//! * Paginated lists serve the current data after the first page (keeping the first page's
//!   `resourceVersion`); `resourceVersionMatch=Exact` lists are served from the current state.
//! * A watch from a `resourceVersion` newer than the server's waits for it instead of
//!   answering "Too large resource version".
//! * Service cluster IPs are not allocated.
//! * Foreground deletion waits only for dependents with `blockOwnerDeletion: true`, as
//!   upstream; the final namespace `finalize` and removal appear as one DELETED event.

mod aggregator;
mod auth;
mod builder;
mod cluster;
mod control;
mod controllers;
mod defaults;
mod discovery;
mod http;
mod ids;
mod owner_index;
mod partial;
mod resources;
mod route;
mod schema;
mod selectors;
mod server;
mod service;
mod smp;
mod ssa;
mod status;
mod store;
mod validation;
mod watch;

pub use crate::aggregator::FrontProxy;
pub use crate::builder::Builder;
pub use crate::cluster::DeploymentMode;
pub use crate::control::{CollectionRead, Fault, LoggedRequest, RequestCounts, RequestKey, Verb};
pub use crate::http::HttpHandle;
pub use crate::server::{Error, FakeApiServer};
