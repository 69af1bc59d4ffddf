//! A small tmpfs of a test's own: a data directory that fills up at a
//! size of the test's choosing, to see what servers do when the disk is
//! full. Mounting needs root, which the tests have in CI; without it a
//! test that asks for one fails (it never skips). Standing alone, so
//! that goblin's tests include it too.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (mount(8)'s syntax: "1m", "512k") on a new
    /// directory named after `name`.
    pub fn mount(name: &str, size: &str) -> Tmpfs {
        let path = std::env::temp_dir().join(format!(
            "goblin-tmpfs-{name}-{}-{}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::create_dir_all(&path).expect("a directory to mount on");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .output()
            .expect("mount(8) runs");
        assert!(
            out.status.success(),
            "mounting a tmpfs on {} failed (the test needs root, as CI has): {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Gives the file system another size, keeping what it holds (a full
    /// disk that gets room again).
    pub fn resize(&self, size: &str) {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.path)
            .output()
            .expect("mount(8) runs");
        assert!(
            out.status.success(),
            "resizing the tmpfs on {} failed: {}",
            self.path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily: a server killed a moment ago may still hold a file.
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
