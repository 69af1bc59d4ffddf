//! What the module's tests share: goblin-server's test helpers (an
//! in-process goblin-server, a reference redis-server as a child process,
//! a RESP2 connection, key snapshots), and a redis-server with the module
//! loaded.

#![allow(dead_code)]

#[path = "../../../../goblin-server/tests/it/common/mod.rs"]
pub mod common;
#[path = "../../../../goblin-server/tests/it/goblin_support/mod.rs"]
pub mod goblin_support;

use goblin_support::RedisProcess;
use std::path::PathBuf;

/// `libgoblin_module.so` as cargo built it for these tests: beside the
/// test binary, in `target/<profile>/deps` (cargo builds the package's
/// library, the .so with it, before its tests; `cargo build` copies it
/// one directory up).
pub fn module_path() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().join("libgoblin_module.so");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build --release -p goblin-module`",
        path.display()
    );
    path
}

/// Debian's redis-server 7.0 with the module loaded, and `extra`
/// directives after that.
pub fn redis_with_module(extra: &[&str]) -> RedisProcess {
    let module = module_path();
    let mut args = vec!["--loadmodule", module.to_str().unwrap()];
    args.extend_from_slice(extra);
    RedisProcess::start_with(&args)
}
