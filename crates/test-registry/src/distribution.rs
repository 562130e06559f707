//! The real CNCF distribution registry (`docker-registry serve`), on loopback, with TLS and auth.

use std::fs;
use std::io::Read as _;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::tls::TestCa;
use crate::token::TokenIssuer;
use crate::{free_port, require_tool};

/// A registry user. `repositories: None` may access everything; `Some(list)` only those
/// repositories (token auth only: htpasswd has no per-repository rules).
#[derive(Debug, Clone)]
pub struct User {
    /// User name.
    pub username: String,
    /// Password.
    pub password: String,
    /// Repositories this user may pull and push (token auth), `None` for all.
    pub repositories: Option<Vec<String>>,
}

impl User {
    /// A user with access to every repository.
    pub fn new(username: &str, password: &str) -> User {
        User {
            username: username.to_owned(),
            password: password.to_owned(),
            repositories: None,
        }
    }

    /// A user limited to the given repositories (token auth).
    pub fn scoped(username: &str, password: &str, repositories: &[&str]) -> User {
        User {
            repositories: Some(repositories.iter().map(|r| (*r).to_owned()).collect()),
            ..User::new(username, password)
        }
    }
}

/// How the registry authenticates.
#[derive(Debug, Clone)]
pub enum Auth {
    /// htpasswd (bcrypt) basic auth.
    Basic(Vec<User>),
    /// Bearer tokens from an in-process [`TokenIssuer`].
    Token(Vec<User>),
}

/// A running `docker-registry`, stopped and cleaned up on drop.
pub struct Distribution {
    child: Child,
    dir: tempfile::TempDir,
    /// `127.0.0.1:PORT`.
    pub host: String,
    /// The CA and server certificates.
    pub ca: TestCa,
    users: Vec<User>,
    _token: Option<TokenIssuer>,
}

impl Distribution {
    /// Starts a registry with basic auth for `username`/`password`.
    pub fn basic(username: &str, password: &str) -> Distribution {
        Distribution::start(Auth::Basic(vec![User::new(username, password)]))
    }

    /// Starts a registry with token auth for these users.
    pub fn token(users: Vec<User>) -> Distribution {
        Distribution::start(Auth::Token(users))
    }

    /// Starts the registry and waits until it accepts connections.
    pub fn start(auth: Auth) -> Distribution {
        let binary = require_tool("docker-registry");
        let dir = tempfile::Builder::new()
            .prefix("opcat-registry-")
            .tempdir()
            .expect("create registry temp dir");
        let ca = TestCa::create(dir.path(), "registry");
        let port = free_port();
        let (users, auth_yaml, token) = match auth {
            Auth::Basic(users) => {
                let htpasswd = dir.path().join("htpasswd");
                let lines: String = users
                    .iter()
                    .map(|u| {
                        let hash = bcrypt::hash(&u.password, 5).expect("bcrypt");
                        format!("{}:{hash}\n", u.username)
                    })
                    .collect();
                fs::write(&htpasswd, lines).expect("write htpasswd");
                let yaml = format!(
                    "  htpasswd:\n    realm: opcat-test\n    path: {}\n",
                    htpasswd.display()
                );
                (users, yaml, None)
            }
            Auth::Token(users) => {
                let issuer = TokenIssuer::start(dir.path(), &ca, users.clone());
                let yaml = format!(
                    "  token:\n    realm: {}\n    service: {}\n    issuer: {}\n    rootcertbundle: {}\n",
                    issuer.realm(),
                    TokenIssuer::SERVICE,
                    TokenIssuer::ISSUER,
                    issuer.signing_cert.display()
                );
                (users, yaml, Some(issuer))
            }
        };
        let config = dir.path().join("config.yml");
        let data = dir.path().join("data");
        fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: {data}\n  \
                 delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: opcat-test-not-secret\n  \
                 tls:\n    certificate: {cert}\n    key: {key}\nauth:\n{auth_yaml}",
                data = data.display(),
                cert = ca.server_cert.display(),
                key = ca.server_key.display(),
            ),
        )
        .expect("write registry config");
        let log = fs::File::create(dir.path().join("registry.log")).expect("create log");
        let log_err = log.try_clone().expect("clone log handle");
        // A scrubbed environment: distribution reads every REGISTRY_* variable as config.
        let child = Command::new(binary)
            .arg("serve")
            .arg(&config)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .expect("start docker-registry");
        let mut registry = Distribution {
            child,
            dir,
            host: format!("127.0.0.1:{port}"),
            ca,
            users,
            _token: token,
        };
        registry.wait_ready();
        registry
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "docker-registry exited with {status} before becoming ready:\n{}",
                    self.log()
                );
            }
            if TcpStream::connect(&self.host).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!(
            "docker-registry did not listen on {} in 15 s:\n{}",
            self.host,
            self.log()
        );
    }

    /// The registry's log so far.
    pub fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = fs::File::open(self.dir.path().join("registry.log")) {
            let _ = file.read_to_string(&mut text);
        }
        text
    }

    /// Requests the registry answered so far whose path contains `path` (`"/v2/"` for all),
    /// refusals included: the lines of its access log
    /// (`127.0.0.1 - - [time] "GET /v2/ HTTP/1.1" 401 …`).
    pub fn requests(&self, path: &str) -> usize {
        self.log()
            .lines()
            .filter_map(request_path)
            .filter(|requested| requested.contains(path))
            .count()
    }

    /// The first configured user.
    pub fn user(&self) -> &User {
        &self.users[0]
    }

    /// `.dockerconfigjson` for the first user.
    pub fn dockerconfigjson(&self) -> String {
        let user = self.user();
        crate::dockerconfigjson(&self.host, &user.username, &user.password)
    }

    /// `user:password` of the first user, for skopeo's `--creds`.
    pub fn creds(&self) -> String {
        format!("{}:{}", self.user().username, self.user().password)
    }

    /// A scratch directory that lives as long as the registry.
    pub fn scratch(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join("scratch").join(name);
        fs::create_dir_all(&path).expect("create scratch dir");
        path
    }

    /// The registry process's id (for its CPU time in `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `HOST/repo:tag`.
    pub fn image(&self, repository_and_tag: &str) -> String {
        format!("{}/{repository_and_tag}", self.host)
    }
}

impl Drop for Distribution {
    fn drop(&mut self) {
        // Our own child, by handle: never anything else.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The path of an access-log line's request (`… "GET /v2/ HTTP/1.1" 401 …` → `/v2/`); `None`
/// for the registry's other log lines.
fn request_path(line: &str) -> Option<&str> {
    let (_, request) = line.split_once("] \"")?;
    let (request, _) = request.split_once(" HTTP/")?;
    let (_method, path) = request.split_once(' ')?;
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::request_path;

    #[test]
    fn only_access_log_lines_have_a_request_path() {
        let access = r#"127.0.0.1 - - [27/Nov/2026:09:40:01 +0000] "GET /v2/widgets/manifests/v1 HTTP/1.1" 401 87 "" "opcat/0.1.0""#;
        assert_eq!(request_path(access), Some("/v2/widgets/manifests/v1"));
        let app = r#"time="2026-11-27T09:40:01Z" level=info msg="response completed" http.request.uri="/v2/widgets/manifests/v1""#;
        assert_eq!(request_path(app), None);
    }
}
