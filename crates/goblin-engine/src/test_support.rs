//! What the unit tests of the command families share: a session on a
//! fresh engine, and commands run through it with their raw RESP replies.

use crate::{Config, ConnInfo, Engine, Session};

/// A session on a fresh engine (DEBUG allowed).
pub(crate) fn session() -> Session {
    let config = Config::new();
    config
        .set_initial("enable-debug-command", "yes")
        .expect("valid");
    Engine::new(config).session(ConnInfo::embedded())
}

/// Runs one command (arguments separated by single spaces) and returns
/// its raw reply.
pub(crate) fn run(s: &mut Session, line: &str) -> String {
    let argv: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    run_args(s, &argv)
}

/// Runs one command given as its arguments (any bytes, spaces and empty
/// arguments included) and returns its raw reply.
pub(crate) fn run_args(s: &mut Session, argv: &[&[u8]]) -> String {
    s.execute(argv);
    String::from_utf8_lossy(&s.out.take()).into_owned()
}

/// `run_args` with text arguments.
pub(crate) fn run_strs(s: &mut Session, args: &[&str]) -> String {
    let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    run_args(s, &argv)
}
