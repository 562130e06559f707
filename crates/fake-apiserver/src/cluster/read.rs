//! GET, LIST (selectors, `limit`/`continue`) and the start of a WATCH.

use base64::Engine as _;
use serde_json::{Value, json};

use super::{Cluster, OpResult, Reply, Target, meta_str, present};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::{Filter, WatchFrom, WatchStart};

/// Query parameters of a list (and of deletecollection).
#[derive(Clone, Debug, Default)]
pub(crate) struct ListParams {
    pub(crate) label_selector: String,
    pub(crate) field_selector: String,
    pub(crate) limit: Option<usize>,
    pub(crate) continue_token: Option<String>,
}

/// Query parameters of a watch.
#[derive(Clone, Debug, Default)]
pub(crate) struct WatchParams {
    pub(crate) list: ListParams,
    pub(crate) resource_version: Option<String>,
    pub(crate) send_initial_events: bool,
    pub(crate) allow_bookmarks: bool,
    pub(crate) timeout_seconds: Option<u64>,
}

impl ListParams {
    pub(crate) fn from_query(query: &[(String, String)]) -> Result<Self, ApiError> {
        let mut p = ListParams::default();
        for (k, v) in query {
            match k.as_str() {
                "labelSelector" => p.label_selector.clone_from(v),
                "fieldSelector" => p.field_selector.clone_from(v),
                "limit" => {
                    let n: usize = v
                        .parse()
                        .map_err(|_| ApiError::bad_request(format!("invalid limit {v:?}")))?;
                    p.limit = (n > 0).then_some(n);
                }
                "continue" if !v.is_empty() => p.continue_token = Some(v.clone()),
                _ => {}
            }
        }
        Ok(p)
    }

    /// The selection this list makes within `t`.
    pub(crate) fn filter(&self, t: &Target) -> Result<Filter, ApiError> {
        let labels = LabelSelector::parse(&self.label_selector)
            .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))?;
        let fields = FieldSelector::parse(&self.field_selector, &t.info.field_labels)
            .map_err(ApiError::bad_request)?;
        Ok(Filter {
            namespace: (t.info.namespaced && !t.namespace.is_empty()).then(|| t.namespace.clone()),
            labels,
            fields,
        })
    }
}

impl WatchParams {
    pub(crate) fn from_query(query: &[(String, String)]) -> Result<Self, ApiError> {
        let mut p = WatchParams {
            list: ListParams::from_query(query)?,
            ..WatchParams::default()
        };
        for (k, v) in query {
            match k.as_str() {
                "resourceVersion" if !v.is_empty() => p.resource_version = Some(v.clone()),
                "sendInitialEvents" => p.send_initial_events = v == "true",
                "allowWatchBookmarks" => p.allow_bookmarks = v == "true",
                "timeoutSeconds" => {
                    p.timeout_seconds = Some(v.parse().map_err(|_| {
                        ApiError::bad_request(format!("invalid timeoutSeconds {v:?}"))
                    })?);
                }
                _ => {}
            }
        }
        Ok(p)
    }
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    rv: u64,
    ns: String,
    name: String,
}

fn encode_continue(token: &ContinueToken) -> String {
    let json = serde_json::to_vec(token).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

fn decode_continue(s: &str) -> Result<ContinueToken, ApiError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| ApiError::bad_request("continue key is not valid: illegal base64 data"))
}

impl Cluster {
    /// Handles GET on a named object (or its status subresource).
    pub(crate) fn get(&self, t: &Target) -> OpResult {
        let obj = self.existing(t)?;
        Ok(Reply {
            code: 200,
            body: present(&t.info, &t.version, &obj),
        })
    }

    /// Handles GET on a collection.
    pub(crate) fn list(&self, t: &Target, p: &ListParams) -> OpResult {
        let filter = p.filter(t)?;
        let key = t.info.key();
        let (snapshot_rv, after) = match &p.continue_token {
            Some(token) => {
                let token = decode_continue(token)?;
                if token.rv < self.store.floor(&key) {
                    return Err(ApiError::continue_expired());
                }
                (token.rv, Some((token.ns, token.name)))
            }
            None => (self.store.current_rv(), None),
        };
        let limit = p.limit.unwrap_or(usize::MAX);
        let mut items = Vec::new();
        let mut more = false;
        let mut remaining = 0_usize;
        let matching = self
            .store
            .iter(&key, after.as_ref())
            .filter(|o| match filter.fields.pinned_name() {
                Some(n) => meta_str(o, "name") == Some(n),
                None => true,
            })
            .filter(|o| filter.matches(o));
        for obj in matching {
            if items.len() >= limit {
                more = true;
                remaining += 1;
                continue;
            }
            let mut item = if t.info.builtin {
                (**obj).clone()
            } else {
                present(&t.info, &t.version, obj)
            };
            if t.info.builtin
                && let Value::Object(m) = &mut item
            {
                m.remove("apiVersion");
                m.remove("kind");
            }
            items.push(item);
        }
        let mut metadata = json!({"resourceVersion": snapshot_rv.to_string()});
        if more && let Some(last) = items.last() {
            metadata["continue"] = encode_continue(&ContinueToken {
                rv: snapshot_rv,
                ns: meta_str(last, "namespace").unwrap_or_default().to_string(),
                name: meta_str(last, "name").unwrap_or_default().to_string(),
            })
            .into();
            if p.label_selector.is_empty() && p.field_selector.is_empty() {
                metadata["remainingItemCount"] = remaining.into();
            }
        }
        Ok(Reply {
            code: 200,
            body: json!({
                "kind": format!("{}List", t.info.kind),
                "apiVersion": t.info.api_version(&t.version),
                "metadata": metadata,
                "items": items,
            }),
        })
    }

    /// Registers a watch; 410 (as an error event, see the HTTP layer) when too old.
    pub(crate) fn start_watch(
        &mut self,
        t: &Target,
        p: &WatchParams,
    ) -> Result<WatchStart, ApiError> {
        let filter = p.list.filter(t)?;
        if !t.name.is_empty() {
            return Err(ApiError::bad_request(
                "watch of a single object: use fieldSelector=metadata.name=<name>",
            ));
        }
        let from =
            match p.resource_version.as_deref() {
                None | Some("0") => WatchFrom::CurrentState,
                Some(_) if p.send_initial_events => WatchFrom::CurrentState,
                Some(rv) => WatchFrom::After(rv.parse().map_err(|_| {
                    ApiError::bad_request(format!("invalid resource version: {rv}"))
                })?),
            };
        self.store.watch(&t.info.key(), filter, from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let t = ContinueToken {
            rv: 7,
            ns: "a".into(),
            name: "b".into(),
        };
        let back = decode_continue(&encode_continue(&t)).unwrap();
        assert_eq!(
            (back.rv, back.ns.as_str(), back.name.as_str()),
            (7, "a", "b")
        );
        assert_eq!(decode_continue("!!").unwrap_err().code, 400);
    }
}
