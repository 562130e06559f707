//! The layer extractor against hostile tar streams: every refusal names the entry, nothing is
//! written outside the target, and whiteouts and limits behave.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod registry_support;

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use opcat::registry::pull::unpack_stream;
use opcat::registry::unpack::{UnpackError, UnpackLimits, Unpacker, UnsafeReason};
use tar::EntryType;

/// One raw tar entry; paths and link names are written verbatim (the `tar` builder would refuse
/// the hostile ones).
struct Raw<'a> {
    kind: EntryType,
    path: &'a str,
    link: &'a str,
    data: &'a [u8],
    mode: u32,
}

fn file<'a>(path: &'a str, data: &'a [u8]) -> Raw<'a> {
    Raw {
        kind: EntryType::Regular,
        path,
        link: "",
        data,
        mode: 0o644,
    }
}
fn dir(path: &str) -> Raw<'_> {
    Raw {
        kind: EntryType::Directory,
        path,
        link: "",
        data: b"",
        mode: 0o755,
    }
}
fn symlink<'a>(path: &'a str, target: &'a str) -> Raw<'a> {
    Raw {
        kind: EntryType::Symlink,
        path,
        link: target,
        data: b"",
        mode: 0o777,
    }
}
fn hardlink<'a>(path: &'a str, target: &'a str) -> Raw<'a> {
    Raw {
        kind: EntryType::Link,
        path,
        link: target,
        data: b"",
        mode: 0o644,
    }
}
fn special(kind: EntryType, path: &str) -> Raw<'_> {
    Raw {
        kind,
        path,
        link: "",
        data: b"",
        mode: 0o644,
    }
}

fn tar(entries: &[Raw<'_>]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for entry in entries {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(entry.kind);
        header.set_size(entry.data.len() as u64);
        header.set_mode(entry.mode);
        header.set_mtime(0);
        let old = header.as_old_mut();
        old.name[..entry.path.len()].copy_from_slice(entry.path.as_bytes());
        old.linkname[..entry.link.len()].copy_from_slice(entry.link.as_bytes());
        header.set_cksum();
        builder.append(&header, entry.data).unwrap();
    }
    builder.into_inner().unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// A sandbox: `base/root` is the target, `base/outside` must stay untouched.
struct Sandbox {
    base: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let base = tempfile::tempdir().unwrap();
        fs::create_dir(base.path().join("root")).unwrap();
        fs::create_dir(base.path().join("outside")).unwrap();
        fs::write(base.path().join("outside/keep"), b"untouched").unwrap();
        Sandbox { base }
    }
    fn root(&self) -> std::path::PathBuf {
        self.base.path().join("root")
    }
    fn unpack(&self, layers: &[Vec<u8>], limits: UnpackLimits) -> Result<(), UnpackError> {
        let mut unpacker = Unpacker::new(&self.root(), limits);
        for layer in layers {
            unpack_stream(&mut unpacker, &mut &layer[..])?;
        }
        unpacker.finish().map(|_| ())
    }
    fn assert_outside_untouched(&self) {
        let outside: Vec<_> = fs::read_dir(self.base.path().join("outside"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(outside, ["keep"]);
        assert_eq!(
            fs::read(self.base.path().join("outside/keep")).unwrap(),
            b"untouched"
        );
        let base: Vec<_> = fs::read_dir(self.base.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            base.len(),
            2,
            "something was created next to the root: {base:?}"
        );
    }
}

fn refused(layers: &[Vec<u8>]) -> (String, UnsafeReason) {
    let sandbox = Sandbox::new();
    let err = sandbox.unpack(layers, UnpackLimits::default()).unwrap_err();
    sandbox.assert_outside_untouched();
    let message = err.to_string();
    match err {
        UnpackError::Unsafe { reason, .. } => (message, reason),
        other => panic!("expected an unsafe-layer refusal, got {other:?}"),
    }
}

#[test]
fn parent_dir_paths_are_refused() {
    let (message, reason) = refused(&[tar(&[file("../outside/evil", b"x")])]);
    assert_eq!(reason, UnsafeReason::ParentDir);
    assert_eq!(
        message,
        "layer entry \"../outside/evil\" refused: path contains \"..\""
    );
    let (_, reason) = refused(&[tar(&[file("a/../../outside/evil", b"x")])]);
    assert_eq!(reason, UnsafeReason::ParentDir);
}

#[test]
fn absolute_paths_are_refused() {
    let (message, reason) = refused(&[gzip(&tar(&[file("/tmp/opcat-evil", b"x")]))]);
    assert_eq!(reason, UnsafeReason::Absolute);
    assert!(
        message.contains("\"/tmp/opcat-evil\" refused: absolute path"),
        "{message}"
    );
    assert!(!Path::new("/tmp/opcat-evil").exists());
}

#[test]
fn symlinks_pointing_outside_are_refused() {
    for target in ["../outside", "/etc/passwd", "a/../../outside", ""] {
        let (message, reason) = refused(&[tar(&[symlink("link", target)])]);
        assert!(
            matches!(reason, UnsafeReason::SymlinkEscapes { .. }),
            "{target}"
        );
        assert!(
            message.contains("points outside the image root"),
            "{message}"
        );
    }
    // Inside the root is fine, even with "..".
    let sandbox = Sandbox::new();
    sandbox
        .unpack(
            &[tar(&[
                dir("a"),
                file("a/f", b"x"),
                symlink("a/l", "../a/f"),
            ])],
            UnpackLimits::default(),
        )
        .unwrap();
    assert_eq!(fs::read(sandbox.root().join("a/l")).unwrap(), b"x");
}

#[test]
fn symlink_chains_that_escape_are_refused_after_unpack() {
    // Each link is lexically inside, but d/q -> "." makes "d/q/../.." leave the root.
    let (message, reason) = refused(&[tar(&[
        dir("d"),
        symlink("d/q", "."),
        symlink("l", "d/q/../.."),
    ])]);
    assert!(
        matches!(reason, UnsafeReason::SymlinkEscapes { .. }),
        "{message}"
    );
    let (_, reason) = refused(&[tar(&[symlink("a", "b"), symlink("b", "a")])]);
    assert_eq!(reason, UnsafeReason::SymlinkLoop);
}

#[test]
fn hardlinks_outside_or_to_non_files_are_refused() {
    for target in ["../outside/keep", "/etc/passwd", "missing", "d"] {
        let (message, reason) = refused(&[tar(&[dir("d"), hardlink("h", target)])]);
        assert!(
            matches!(reason, UnsafeReason::BadHardlink { .. }),
            "{target}: {message}"
        );
    }
    // Through a symlink to a file outside: refused too.
    let (_, reason) = refused(&[tar(&[
        symlink("s", "."),
        file("f", b"x"),
        hardlink("h", "s/f"),
    ])]);
    assert!(matches!(reason, UnsafeReason::BadHardlink { .. }));
    // A hard link to a file inside is kept.
    let sandbox = Sandbox::new();
    sandbox
        .unpack(
            &[tar(&[file("f", b"data"), hardlink("h", "f")])],
            UnpackLimits::default(),
        )
        .unwrap();
    assert_eq!(fs::read(sandbox.root().join("h")).unwrap(), b"data");
}

#[test]
fn writes_through_symlinks_are_refused() {
    let (message, reason) =
        refused(&[tar(&[dir("real"), symlink("s", "real"), file("s/x", b"x")])]);
    assert_eq!(
        reason,
        UnsafeReason::ThroughSymlink {
            link: "s".to_owned()
        }
    );
    assert_eq!(
        message,
        "layer entry \"s/x\" refused: would write through symlink \"s\""
    );
    // Across layers, and for whiteouts.
    let (_, reason) = refused(&[
        tar(&[dir("real"), symlink("s", "real")]),
        tar(&[file("s/x", b"x")]),
    ]);
    assert!(matches!(reason, UnsafeReason::ThroughSymlink { .. }));
    let (_, reason) = refused(&[
        tar(&[dir("real"), file("real/x", b"x"), symlink("s", "real")]),
        tar(&[file("s/.wh.x", b"")]),
    ]);
    assert!(matches!(reason, UnsafeReason::ThroughSymlink { .. }));
}

#[test]
fn devices_and_fifos_are_refused() {
    for (kind, name) in [
        (EntryType::Char, "character device"),
        (EntryType::Block, "block device"),
        (EntryType::Fifo, "FIFO"),
    ] {
        let (message, reason) = refused(&[tar(&[special(kind, "dev")])]);
        assert_eq!(reason, UnsafeReason::SpecialFile(name));
        assert_eq!(
            message,
            format!("layer entry \"dev\" refused: {name} entries are not allowed")
        );
    }
}

#[test]
fn limits_are_enforced() {
    let limits = UnpackLimits {
        max_total_bytes: 100,
        max_files: 3,
        max_file_bytes: 60,
    };
    let cases = [
        (
            tar(&[file("big", &[7; 61])]),
            "layer entry \"big\" exceeds the single-file size limit of 60",
        ),
        (
            tar(&[file("a", &[1; 60]), file("b", &[1; 41])]),
            "layer entry \"b\" exceeds the total size limit of 100",
        ),
        (
            tar(&[
                file("a", b""),
                file("b", b""),
                file("c", b""),
                file("d", b""),
            ]),
            "layer entry \"d\" exceeds the entry count limit of 3",
        ),
    ];
    for (layer, expected) in cases {
        let sandbox = Sandbox::new();
        let err = sandbox.unpack(&[gzip(&layer)], limits).unwrap_err();
        assert_eq!(err.to_string(), expected);
        assert_eq!(err.kind(), "limit_exceeded");
        sandbox.assert_outside_untouched();
    }
}

#[test]
fn decompression_bombs_hit_the_stream_limit() {
    let limits = UnpackLimits {
        max_total_bytes: 1024,
        max_files: 2,
        max_file_bytes: 1024,
    };
    // A tiny valid tar followed by megabytes of zeros (which compress to almost nothing).
    let mut stream = tar(&[file("f", b"x")]);
    stream.extend(std::iter::repeat_n(0u8, 8 << 20));
    let sandbox = Sandbox::new();
    let err = sandbox.unpack(&[gzip(&stream)], limits).unwrap_err();
    assert!(matches!(err, UnpackError::StreamTooLarge { .. }), "{err}");
    assert_eq!(err.kind(), "limit_exceeded");
}

#[test]
fn whiteouts_apply_across_layers() {
    let sandbox = Sandbox::new();
    let layers = [
        tar(&[
            dir("a"),
            file("a/x", b"1"),
            file("a/y", b"2"),
            dir("b"),
            file("b/z", b"3"),
            file("c", b"4"),
        ]),
        tar(&[file("a/.wh.x", b""), file(".wh.b", b"")]),
        tar(&[
            dir("c2"),
            file("c2/keep", b"5"),
            file("a/.wh..wh..opq", b""),
            file("a/new", b"6"),
        ]),
    ];
    sandbox.unpack(&layers, UnpackLimits::default()).unwrap();
    let files = registry_support::tree(&sandbox.root());
    let names: Vec<String> = files.keys().map(|p| p.display().to_string()).collect();
    assert_eq!(names, ["a/new", "c", "c2/keep"]);
    assert!(!sandbox.root().join("b").exists());
}

#[test]
fn opaque_whiteout_keeps_entries_of_its_own_layer() {
    let sandbox = Sandbox::new();
    let layers = [
        tar(&[dir("a"), file("a/old", b"1")]),
        // The new file comes before the opaque marker in the same layer.
        tar(&[file("a/new", b"2"), file("a/.wh..wh..opq", b"")]),
    ];
    sandbox.unpack(&layers, UnpackLimits::default()).unwrap();
    assert!(sandbox.root().join("a/new").exists());
    assert!(!sandbox.root().join("a/old").exists());
}

#[test]
fn later_entries_replace_earlier_ones_and_modes_are_tamed() {
    let sandbox = Sandbox::new();
    let mut setuid = file("bin", b"#!/bin/sh\n");
    setuid.mode = 0o4777;
    let layers = [
        tar(&[dir("x"), file("x/f", b"1"), file("y", b"file"), setuid]),
        tar(&[file("x", b"now a file"), dir("y"), file("y/inner", b"2")]),
    ];
    sandbox.unpack(&layers, UnpackLimits::default()).unwrap();
    assert_eq!(fs::read(sandbox.root().join("x")).unwrap(), b"now a file");
    assert_eq!(fs::read(sandbox.root().join("y/inner")).unwrap(), b"2");
    let mode = fs::metadata(sandbox.root().join("bin"))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o755);
}

#[test]
fn truncated_and_garbage_layers_are_malformed() {
    let mut truncated = tar(&[file("f", &[1; 2000])]);
    truncated.truncate(1000);
    for layer in [
        truncated,
        gzip(b"this is not a tar archive, just text that is long enough to fill a block"),
    ] {
        let sandbox = Sandbox::new();
        let err = sandbox
            .unpack(&[layer], UnpackLimits::default())
            .unwrap_err();
        assert_eq!(err.kind(), "malformed_layer", "{err}");
    }
}
