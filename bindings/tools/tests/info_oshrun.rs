//! `oxshmem-info` says when the `oshrun` a shell would run is not oxshmem's: OpenMPI installs
//! `/usr/bin/oshrun` (a link to `orterun`) on Debian, ahead of ours unless the install's `bin/`
//! comes first on PATH. Each case copies `oxshmem-info` into a folder of its own (with or
//! without an `oshrun` beside it) and sets PATH to folders made for the test.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh folder under the system's temporary directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("oxshmem-info-oshrun-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn script(path: &Path) {
    std::fs::write(path, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `dir/oxshmem-info` (a copy), and `dir/oshrun` (a stand-in) when `with_oshrun`.
fn info_in(dir: &Path, with_oshrun: bool) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let info = dir.join("oxshmem-info");
    std::fs::copy(env!("CARGO_BIN_EXE_oxshmem-info"), &info).unwrap();
    if with_oshrun {
        script(&dir.join("oshrun"));
    }
    info
}

/// A folder laid out as Debian's OpenMPI: `oshrun -> mpirun.openmpi -> orterun`.
fn openmpi_bin(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    script(&dir.join("orterun"));
    symlink("orterun", dir.join("mpirun.openmpi")).unwrap();
    symlink("mpirun.openmpi", dir.join("oshrun")).unwrap();
    dir.to_path_buf()
}

/// The `launcher:warning` line of `--parsable`, if any.
fn warning(info: &Path, path: &[&Path]) -> Option<String> {
    let path = std::env::join_paths(path).unwrap();
    let out = Command::new(info).arg("--parsable").env("PATH", path).output().unwrap();
    assert!(out.status.success(), "oxshmem-info failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().find_map(|l| l.strip_prefix("launcher:warning:")).map(str::to_string)
}

#[test]
fn openmpis_oshrun_ahead_of_ours_is_named_with_the_fix() {
    let s = Scratch::new("ahead");
    let ours = s.0.join("prefix/bin");
    let info = info_in(&ours, true);
    let ompi = openmpi_bin(&s.0.join("usr/bin"));
    let w = warning(&info, &[&ompi, &ours]).expect("a warning when OpenMPI's oshrun comes first");
    assert!(w.contains("OpenMPI's launcher, which cannot start oxshmem programs"), "{w}");
    assert!(w.contains(&format!("{} -> ", ompi.join("oshrun").display())), "{w}");
    assert!(w.contains("orterun"), "{w}");
    assert!(w.contains(&format!("export PATH={}:$PATH", ours.display())), "{w}");

    // Ours first: nothing to say.
    assert_eq!(warning(&info, &[&ours, &ompi]), None);
}

#[test]
fn another_oshrun_ahead_of_ours_is_named_too() {
    let s = Scratch::new("other");
    let ours = s.0.join("prefix/bin");
    let info = info_in(&ours, true);
    let other = s.0.join("elsewhere");
    std::fs::create_dir_all(&other).unwrap();
    script(&other.join("oshrun"));
    let w = warning(&info, &[&other, &ours]).expect("a warning when another oshrun comes first");
    assert!(w.contains("another launcher than the one beside oxshmem-info"), "{w}");
    assert!(w.contains(&format!("export PATH={}:$PATH", ours.display())), "{w}");
}

#[test]
fn openmpis_oshrun_with_none_of_ours_beside_says_where_ours_is() {
    let s = Scratch::new("alone");
    let info = info_in(&s.0.join("tools"), false);
    let ompi = openmpi_bin(&s.0.join("usr/bin"));
    let w = warning(&info, &[&ompi]).expect("a warning when the only oshrun is OpenMPI's");
    assert!(w.contains("OpenMPI's launcher, which cannot start oxshmem programs"), "{w}");
    assert!(w.contains("target/<profile>/oshrun") && w.contains("<prefix>/bin"), "{w}");

    // No oshrun at all, or one that is not OpenMPI's: no warning.
    let empty = s.0.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert_eq!(warning(&info, &[&empty]), None);
}
