//! Letting the async runtime carry on while a command blocks its thread.
//!
//! Commands run synchronously on the runtime's worker threads, which is
//! right for the short commands they almost always are. A script that runs
//! long (or a command waiting behind one) would otherwise hold its worker's
//! queue of tasks and, possibly, the I/O driver hostage, so that nobody
//! could even read a SCRIPT KILL. Such waits call [`release_worker`] once:
//! the worker's duties move to another thread (tokio's `block_in_place`)
//! and this thread finishes its command as a plain blocking thread.

use std::time::Duration;

/// Hands the current worker's queue and driver to another thread. Cheap to
/// call again afterwards (there is nothing left to hand over); a no-op
/// outside a multi-threaded runtime.
pub fn release_worker() {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return;
    }
    // block_in_place starts a thread to take the worker over, and takes the
    // worker back when the closure ends if that thread has not started
    // yet: the pause gives it the time to.
    let _ = std::panic::catch_unwind(|| {
        tokio::task::block_in_place(|| std::thread::sleep(Duration::from_millis(1)))
    });
}
