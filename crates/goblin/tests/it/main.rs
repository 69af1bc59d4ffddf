//! goblin's tests, built as one test binary: each module below was a test
//! binary of its own. `support` holds the fixtures of the conformance
//! cases (an embedded store, goblin-server in-process, Debian's
//! redis-server as a child process).

mod support;

mod blocking;
mod cluster;
mod config;
mod conformance;
mod custom_driver;
mod ratelimit;
mod reconnect;
mod redis_compat;
mod remote_steps;
mod session;
mod store;
mod throttle;
