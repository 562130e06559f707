//! Third-party image tools: `umoci` builds OCI layouts, `skopeo` copies and inspects.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Distribution, require_tool};

/// An image in a local OCI layout (`oci:DIR:TAG`).
#[derive(Debug, Clone)]
pub struct OciLayout {
    /// The layout directory.
    pub dir: PathBuf,
    /// The tag inside it.
    pub tag: String,
}

impl OciLayout {
    /// `oci:DIR:TAG` for skopeo.
    pub fn transport(&self) -> String {
        format!("oci:{}:{}", self.dir.display(), self.tag)
    }
}

fn run(command: &mut Command) -> Result<String, String> {
    let output = command
        .output()
        .map_err(|e| format!("cannot run {command:?}: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

fn must(command: &mut Command) -> String {
    let shown = format!("{command:?}");
    run(command).unwrap_or_else(|stderr| panic!("{shown} failed:\n{stderr}"))
}

fn is_root() -> bool {
    run(Command::new("id").arg("-u")).is_ok_and(|out| out.trim() == "0")
}

/// Builds a single-layer image of `content`'s files with `umoci` (unpack → copy → repack →
/// config; never `umoci insert`, which writes truncated layers in Debian's 0.4.7), files owned
/// by 0:0, with the given config labels.
pub fn umoci_image(work: &Path, content: &Path, labels: &[(&str, &str)]) -> OciLayout {
    let umoci = require_tool("umoci");
    let layout = work.join("layout");
    let bundle = work.join("bundle");
    let image = format!("{}:v1", layout.display());
    let rootless: &[&str] = if is_root() { &[] } else { &["--rootless"] };
    must(
        Command::new(&umoci)
            .arg("init")
            .arg("--layout")
            .arg(&layout),
    );
    must(Command::new(&umoci).args(["new", "--image", &image]));
    must(
        Command::new(&umoci)
            .arg("unpack")
            .args(rootless)
            .args(["--image", &image])
            .arg(&bundle),
    );
    must(
        Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", content.display()))
            .arg(bundle.join("rootfs")),
    );
    must(
        Command::new(&umoci)
            .arg("repack")
            .args(["--image", &image])
            .arg(&bundle),
    );
    let mut config = Command::new(&umoci);
    config.args(["config", "--image", &image]);
    for (key, value) in labels {
        config.arg("--config.label").arg(format!("{key}={value}"));
    }
    must(&mut config);
    OciLayout {
        dir: layout,
        tag: "v1".to_owned(),
    }
}

/// `skopeo copy` from an OCI layout to the registry with its credentials and CA; returns the
/// pushed manifest digest. `format` is `oci` or `v2s2`.
pub fn skopeo_push(
    layout: &OciLayout,
    registry: &Distribution,
    image: &str,
    format: &str,
) -> String {
    let skopeo = require_tool("skopeo");
    let digest_file = registry
        .scratch("digests")
        .join(image.replace(['/', ':'], "_"));
    must(
        Command::new(skopeo)
            .args(["copy", "-q", "--format", format, "--digestfile"])
            .arg(&digest_file)
            .args(["--dest-creds", &registry.creds(), "--dest-cert-dir"])
            .arg(&registry.ca.cert_dir)
            .arg(layout.transport())
            .arg(format!("docker://{image}")),
    );
    std::fs::read_to_string(&digest_file)
        .expect("skopeo digest file")
        .trim()
        .to_owned()
}

/// `skopeo inspect` (`--raw` too when `raw`), parsed as JSON.
pub fn skopeo_inspect(registry: &Distribution, image: &str, raw: bool) -> serde_json::Value {
    let skopeo = require_tool("skopeo");
    let mut command = Command::new(skopeo);
    command.arg("inspect");
    if raw {
        command.arg("--raw");
    }
    let out = must(
        command
            .args(["--creds", &registry.creds(), "--cert-dir"])
            .arg(&registry.ca.cert_dir)
            .arg(format!("docker://{image}")),
    );
    serde_json::from_str(&out).expect("skopeo inspect prints JSON")
}

/// `skopeo copy docker://IMAGE DEST` with the registry's credentials; `Err(stderr)` on failure.
pub fn skopeo_copy_from(
    registry: &Distribution,
    image: &str,
    dest: &str,
) -> Result<String, String> {
    let skopeo = require_tool("skopeo");
    run(Command::new(skopeo)
        .args([
            "copy",
            "-q",
            "--src-creds",
            &registry.creds(),
            "--src-cert-dir",
        ])
        .arg(&registry.ca.cert_dir)
        .arg(format!("docker://{image}"))
        .arg(dest))
}
