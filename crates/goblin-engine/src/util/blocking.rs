//! Letting the async runtime carry on while a command blocks its thread.
//!
//! Commands run synchronously on the runtime's worker threads, which is
//! right for the short commands they almost always are. But a worker busy
//! with a long script (or waiting behind one) neither runs the tasks queued
//! on it nor polls for I/O, and a tokio worker that went to sleep while
//! another one held the I/O driver is not woken up for new I/O: nobody
//! would even read the SCRIPT KILL. Such long waits call
//! [`release_worker`] once, which wakes the sleeping workers (one of them
//! then takes over polling for I/O) and hands this worker's queue to
//! another thread.

use std::time::Duration;

/// See the module documentation. Cheap to repeat; a no-op outside a
/// multi-threaded runtime.
pub fn release_worker() {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return;
    }
    // Scheduling tasks wakes sleeping workers; a woken worker that finds
    // nothing to do goes back to sleep on the I/O driver, which this
    // thread is not holding.
    for _ in 0..2 {
        drop(handle.spawn(async {}));
    }
    // Move this worker's queue to a new thread (block_in_place); the pause
    // gives that thread the time to take it before block_in_place would
    // take it back.
    let _ = std::panic::catch_unwind(|| {
        tokio::task::block_in_place(|| std::thread::sleep(Duration::from_millis(1)))
    });
}
