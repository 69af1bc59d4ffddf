//! Deliberate crashes (DEBUG SEGFAULT, DEBUG ASSERT, DEBUG PANIC), as
//! Redis's debug.c provokes them to test its crash reports. A host that
//! writes crash reports (goblin-server) installs a `Reporter`; the report
//! of a signal comes from the host's signal handler.

use std::sync::OnceLock;

/// The host's crash report: `start` writes the report's opening line,
/// `finish` the stack trace and the closing lines.
#[derive(Clone, Copy)]
pub struct Reporter {
    pub start: fn(),
    pub finish: fn(),
}

static REPORTER: OnceLock<Reporter> = OnceLock::new();

/// Installs the crash reporter (once, at startup).
pub fn set_reporter(r: Reporter) {
    let _ = REPORTER.set(r);
}

/// DEBUG SEGFAULT: the process receives SIGSEGV, whose handler (if the
/// host installed one) writes the crash report.
pub fn segfault() -> ! {
    // SAFETY: raise only delivers a signal to this thread.
    unsafe {
        libc::raise(libc::SIGSEGV);
    }
    // Without a handler SIGSEGV ends the process; with one that returned,
    // end it anyway.
    std::process::abort()
}

/// Redis's _serverAssert: the report of a failed assertion, then the end
/// of the process (exit status 1 under use-exit-on-panic, else SIGABRT).
pub fn assertion_failed(expr: &str, file: &str, exit_on_panic: bool) -> ! {
    fail(
        &[
            "=== ASSERTION FAILED ===".to_string(),
            format!("==> {file} '{expr}' is not true"),
        ],
        exit_on_panic,
    )
}

/// Redis's _serverPanic.
pub fn panic(msg: &str, exit_on_panic: bool) -> ! {
    fail(
        &[
            "------------------------------------------------".to_string(),
            "!!! Software Failure. Press left mouse button to continue".to_string(),
            format!("Guru Meditation: {msg}"),
        ],
        exit_on_panic,
    )
}

fn fail(lines: &[String], exit_on_panic: bool) -> ! {
    let reporter = REPORTER.get();
    if let Some(r) = reporter {
        (r.start)();
    }
    for line in lines {
        crate::log::warning(line);
    }
    if let Some(r) = reporter {
        (r.finish)();
    }
    // SAFETY: _exit and signal are async-signal-safe calls that end the
    // process or reset a disposition.
    unsafe {
        if exit_on_panic {
            libc::_exit(1);
        }
        // The report is written: SIGABRT must not write another.
        libc::signal(libc::SIGABRT, libc::SIG_DFL);
    }
    std::process::abort()
}
