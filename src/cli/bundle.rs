//! `opcat bundle validate|render|unpack|push`
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::CliResult;
use super::registry_args::RegistryArgs;
use crate::registry::ImageRef;
use crate::registry::push::build_bundle_image;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Check a bundle (directory or image) and print every problem at once.
    ///
    /// Errors (exit code 1) are what opcat or OLM would refuse or mis-install: the annotations,
    /// every manifest, the ClusterServiceVersion (install modes, version, OLM annotation names,
    /// install strategy, webhooks), owned CRDs and dependencies.yaml. Warnings are shown but
    /// exit 0. A valid bundle gets a one-line summary.
    Validate(super::bundle_validate::ValidateArgs),
    /// Print the objects opcat would apply to install a bundle (directory or image).
    ///
    /// A YAML stream in apply order, through the renderer the controller uses, for one install
    /// namespace and install mode; the pull-secret copies and where they are attached are
    /// named (never their data).
    Render(super::bundle_render::RenderArgs),
    /// Pull a bundle image (verifying every digest) and unpack it safely into DIR.
    ///
    /// DIR must not exist or be empty; it is only created once the whole image checked out.
    Unpack(UnpackArgs),
    /// Build a reproducible bundle image from DIR (manifests/ + metadata/) and push it.
    ///
    /// The image is labelled with metadata/annotations.yaml, as opm does. The same directory
    /// always gives the same digest.
    Push(PushArgs),
}

#[derive(Debug, clap::Args)]
pub struct UnpackArgs {
    /// Bundle image, e.g. quay.io/org/my-operator-bundle:v1.2.3 or …@sha256:….
    pub image: String,
    /// Directory to unpack into.
    pub dir: PathBuf,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// Bundle directory with manifests/ and metadata/annotations.yaml.
    pub dir: PathBuf,
    /// Image to push to, e.g. registry.example.com/bundles/my-operator:v1.2.3.
    pub image: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

pub async fn execute(command: Command) -> CliResult {
    match command {
        Command::Validate(args) => super::bundle_validate::validate(args).await,
        Command::Render(args) => super::bundle_render::render_bundle(args).await,
        Command::Unpack(args) => unpack(args).await,
        Command::Push(args) => push(args).await,
    }
}

async fn unpack(args: UnpackArgs) -> CliResult {
    let image: ImageRef = args.image.parse()?;
    let target = prepare_target(&args.dir)?;
    let keyring = args.registry.keyring(&image)?;
    let parent = parent_dir(&target)?;
    // Without --cache-dir the image is pulled into a staging cache beside the target and the
    // verified tree is moved (not copied) into place; the rest is removed on drop.
    let staging = tempfile::Builder::new()
        .prefix(".opcat-unpack-")
        .tempdir_in(&parent)
        .map_err(|e| {
            format!(
                "cannot create a temporary directory in {}: {e}",
                parent.display()
            )
        })?;
    let unpacked = if args.registry.cache_dir.is_some() {
        let unpacked = args.registry.registry()?.fetch(&image, &keyring).await?;
        let copy = staging.path().join("copy");
        std::fs::create_dir(&copy)?;
        copy_tree(&unpacked.root, &copy)?;
        move_into_place(&copy, &target)?;
        unpacked
    } else {
        let registry = args
            .registry
            .registry_with_cache(&staging.path().join("cache"))?;
        let unpacked = registry.fetch(&image, &keyring).await?;
        move_into_place(&unpacked.root, &target)?;
        unpacked
    };
    println!(
        "unpacked {image} ({}) into {}",
        unpacked.digest,
        target.display()
    );
    Ok(ExitCode::SUCCESS)
}

async fn push(args: PushArgs) -> CliResult {
    let built = build_bundle_image(&args.dir)?;
    args.registry.push(&args.image, &built).await?;
    Ok(ExitCode::SUCCESS)
}

/// Refuses a target that exists and is not an empty directory.
fn prepare_target(dir: &Path) -> Result<PathBuf, Box<dyn std::error::Error + Send + Sync>> {
    if dir.exists() {
        let empty = std::fs::read_dir(dir)
            .map_err(|e| {
                format!(
                    "{} exists and is not a readable directory: {e}",
                    dir.display()
                )
            })?
            .next()
            .is_none();
        if !empty {
            return Err(format!("{} exists and is not empty", dir.display()).into());
        }
    }
    Ok(dir.to_owned())
}

fn parent_dir(target: &Path) -> Result<PathBuf, Box<dyn std::error::Error + Send + Sync>> {
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    Ok(parent)
}

/// Renames a complete tree (on the same file system) to `target`, which is absent or empty:
/// `target` appears complete or not at all.
fn move_into_place(
    tree: &Path,
    target: &Path,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    if target.exists() {
        // Checked empty by `prepare_target`.
        std::fs::remove_dir(target)
            .map_err(|e| format!("cannot replace empty {}: {e}", target.display()))?;
    }
    std::fs::rename(tree, target).map_err(|e| {
        format!(
            "cannot move the unpacked image to {}: {e}",
            target.display()
        )
    })?;
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for item in std::fs::read_dir(from)? {
        let item = item?;
        let (source, dest) = (item.path(), to.join(item.file_name()));
        let kind = item.file_type()?;
        if kind.is_dir() {
            std::fs::create_dir(&dest)?;
            copy_tree(&source, &dest)?;
        } else if kind.is_symlink() {
            // Already checked to stay inside the image root.
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &dest)?;
        } else {
            std::fs::copy(&source, &dest)?;
        }
    }
    Ok(())
}
