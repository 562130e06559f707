//! The test-facing side of identity: tokens and clients that present them.

use http::HeaderValue;

use crate::server::FakeApiServer;
use crate::service::FakeService;

impl FakeApiServer {
    /// Mints a token for the ServiceAccount `namespace/name` (user
    /// `system:serviceaccount:<namespace>:<name>`, groups `system:serviceaccounts`,
    /// `system:serviceaccounts:<namespace>`, `system:authenticated`), as the TokenRequest API
    /// would for a pod running as it. The token is bound to the ServiceAccount's uid: it stops
    /// authenticating (401) once the ServiceAccount is deleted or replaced. Minted before the
    /// ServiceAccount exists, it authenticates whichever ServiceAccount of that name exists.
    pub fn service_account_token(&self, namespace: &str, name: &str) -> String {
        let cluster = self.shared.cluster();
        self.shared
            .tokens
            .mint_service_account(&cluster, namespace, name)
    }

    /// Registers a user token after the server is built (see [`crate::Builder::user_token`]).
    pub fn add_user_token(&self, token: &str, username: &str, groups: &[&str]) {
        let groups: Vec<String> = groups.iter().map(|g| (*g).to_string()).collect();
        self.shared.tokens.add_user(token, username, &groups);
    }

    /// A `kube::Client` talking to this server in-process with `Authorization: Bearer
    /// <token>`: its requests are authenticated as the token's user and authorized by RBAC
    /// (an unknown token gets 401 on every request). Must be called inside a Tokio runtime.
    ///
    /// # Panics
    ///
    /// When `token` is not a valid HTTP header value.
    pub fn client_with_token(&self, token: &str) -> kube::Client {
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .unwrap_or_else(|_| panic!("token {token:?} is not a valid header value"));
        kube::Client::new(
            FakeService {
                shared: self.shared.clone(),
                agent: None,
                authorization: Some(value),
            },
            "default",
        )
    }
}
