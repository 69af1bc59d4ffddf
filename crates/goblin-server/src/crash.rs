//! Crash reports (Redis's sigsegvHandler, bugReportStart, logStackTrace,
//! bugReportEnd): on SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT the log
//! gets the signal, the address and sender where known, the stack trace
//! of the crashing thread (unless crash-log-enabled is no), and the end of
//! the report; the signal is then raised again with its default action,
//! so the process ends as it would have without the report.
//!
//! The handler allocates nothing and takes no lock: lines are formatted
//! into a buffer on its stack and written with write(2) to the log file,
//! opened by the path kept at startup (or to standard output), in the form
//! of Redis's serverLogFromHandler ("pid:signal-handler (unixtime) text").
//! The stack trace comes from glibc's backtrace() and
//! backtrace_symbols_fd(), which write without allocating once loaded
//! (install() loads them).

use std::ffi::CString;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// The log file ("" for standard output).
static LOG_PATH: OnceLock<CString> = OnceLock::new();
/// crash-log-enabled: whether the report includes the stack trace.
static STACK_TRACE: AtomicBool = AtomicBool::new(true);

extern "C" {
    // glibc's <execinfo.h>.
    fn backtrace(buffer: *mut *mut c_void, size: c_int) -> c_int;
    fn backtrace_symbols_fd(buffer: *const *mut c_void, size: c_int, fd: c_int);
}

const FATAL_SIGNALS: [c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
];

/// Installs the handlers. `logfile` is the log's path ("" = standard
/// output), `stack_trace` is crash-log-enabled.
pub fn install(logfile: &str, stack_trace: bool) {
    let _ = LOG_PATH.set(CString::new(logfile).unwrap_or_default());
    STACK_TRACE.store(stack_trace, Ordering::Relaxed);
    // The first backtrace() loads libgcc_s, which allocates: do it now.
    let mut frames = [std::ptr::null_mut::<c_void>(); 4];
    // SAFETY: the buffer holds the 4 entries asked for.
    unsafe { backtrace(frames.as_mut_ptr(), 4) };
    for sig in FATAL_SIGNALS {
        // SAFETY: a zeroed sigaction with our handler, SA_SIGINFO for the
        // three-argument form; SA_RESETHAND restores the default action
        // before the handler runs, so raising the signal again ends the
        // process; SA_ONSTACK runs it on the thread's alternate stack
        // (Rust gives its threads one) so that a stack overflow is
        // reported too.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_fatal_signal as *const () as usize;
            act.sa_flags =
                libc::SA_SIGINFO | libc::SA_NODEFER | libc::SA_RESETHAND | libc::SA_ONSTACK;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
    goblin_engine::crash::set_reporter(goblin_engine::crash::Reporter {
        start: || with_log(start),
        finish: || with_log(finish),
    });
}

/// A line buffer on the stack (no allocation in a signal handler).
struct Line {
    buf: [u8; 512],
    len: usize,
}

impl std::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

fn write_all(fd: c_int, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: writes from a live buffer of the given length.
        let n = unsafe { libc::write(fd, bytes.as_ptr() as *const c_void, bytes.len()) };
        if n <= 0 {
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

/// Writes one log line as serverLogFromHandler does.
fn log_line(fd: c_int, args: std::fmt::Arguments<'_>) {
    use std::fmt::Write as _;
    let mut line = Line {
        buf: [0; 512],
        len: 0,
    };
    // SAFETY: getpid and time(NULL) are async-signal-safe.
    let (pid, now) = unsafe { (libc::getpid(), libc::time(std::ptr::null_mut())) };
    let _ = write!(line, "{pid}:signal-handler ({now}) ");
    let _ = line.write_fmt(args);
    let _ = line.write_str("\n");
    write_all(fd, &line.buf[..line.len]);
}

/// Runs `f` with the log's file descriptor.
fn with_log(f: impl FnOnce(c_int)) {
    let path = LOG_PATH.get();
    match path {
        Some(p) if !p.as_bytes().is_empty() => {
            // SAFETY: open/close are async-signal-safe; the path is a
            // NUL-terminated string that lives for the process.
            let fd = unsafe {
                libc::open(
                    p.as_ptr(),
                    libc::O_APPEND | libc::O_CREAT | libc::O_WRONLY,
                    0o644,
                )
            };
            if fd >= 0 {
                f(fd);
                unsafe { libc::close(fd) };
            }
        }
        _ => f(libc::STDOUT_FILENO),
    }
}

fn start(fd: c_int) {
    write_all(
        fd,
        b"\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===\n",
    );
}

fn finish(fd: c_int) {
    if STACK_TRACE.load(Ordering::Relaxed) {
        write_all(fd, b"\n------ STACK TRACE ------\n\nBacktrace:\n");
        let mut frames = [std::ptr::null_mut::<c_void>(); 100];
        // SAFETY: the buffer holds the 100 entries asked for, and
        // backtrace_symbols_fd reads the n that backtrace filled.
        unsafe {
            let n = backtrace(frames.as_mut_ptr(), frames.len() as c_int);
            backtrace_symbols_fd(frames.as_ptr(), n, fd);
        }
        write_all(fd, b"\n------ DONE ------\n");
    }
    write_all(
        fd,
        b"\n=== REDIS BUG REPORT END. Make sure to include from START to END. ===\n\n",
    );
}

extern "C" fn on_fatal_signal(sig: c_int, info: *mut libc::siginfo_t, _context: *mut c_void) {
    with_log(|fd| {
        start(fd);
        // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO
        // handler.
        let info = unsafe { &*info };
        log_line(
            fd,
            format_args!(
                "Goblin {} crashed by signal: {sig}, si_code: {}",
                goblin_engine::VERSION,
                info.si_code
            ),
        );
        if sig == libc::SIGSEGV || sig == libc::SIGBUS {
            // SAFETY: si_addr is defined for these signals.
            log_line(
                fd,
                format_args!("Accessing address: {:p}", unsafe { info.si_addr() }),
            );
        }
        if info.si_code == libc::SI_USER {
            // SAFETY: si_pid and si_uid are defined for a signal a process
            // sent (SI_USER).
            let (pid, uid) = unsafe { (info.si_pid(), info.si_uid()) };
            log_line(fd, format_args!("Killed by PID: {pid}, UID: {uid}"));
        }
        finish(fd);
    });
    // SA_RESETHAND restored the default action: this ends the process
    // with the signal it got.
    // SAFETY: raise is async-signal-safe.
    unsafe {
        libc::raise(sig);
    }
}
