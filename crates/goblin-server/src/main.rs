//! `goblin-server`: starts Goblin on 127.0.0.1:6379 with its data in ./data
//! unless told otherwise (see `goblin-server --help`).

use goblin_engine::Engine;
use goblin_server::config::{parse_args, usage, Invocation};
use goblin_server::{log, Server};

// jemalloc, as Redis uses: low fragmentation for many small objects, and
// the statistics behind INFO memory.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts (a C string). The heap asks
/// for transparent huge pages (THP "madvise" mode, the common default),
/// which `disable-thp no` lets it have: keys are looked up at random across
/// the whole heap, and with 4 KiB pages nearly every lookup of a large
/// keyspace also misses the TLB (about 5% of GET throughput at a million
/// keys here). With `disable-thp yes`, Redis's default and Goblin's, the
/// process refuses them (PR_SET_THP_DISABLE, in main): a huge page is
/// resident whole, which doubled the resident size of a 12 MB cache. A background
/// thread returns freed pages to the system after jemalloc's decay time
/// (10 s), as Redis's jemalloc-bg-thread does: without it, pages are
/// purged only while the program allocates, so memory freed by clients
/// that went away would stay resident in an idle server. The environment
/// variable _RJEM_MALLOC_CONF overrides these (`thp:default`).
#[export_name = "_rjem_malloc_conf"]
pub static MALLOC_CONF: &[u8; 52] = b"thp:always,metadata_thp:auto,background_thread:true\0";

/// Redis's sigShutdownHandler: the shutdown is scheduled for the cron; a
/// second SIGINT while one is pending or saving exits at once, removing
/// the save's temp file.
fn on_shutdown_signal(engine: &std::sync::Arc<Engine>, sig: i32) {
    if sig == libc::SIGINT && engine.pending_shutdown_signal() != 0 {
        log::warning("You insist... exiting now.");
        let _ = std::fs::remove_file(goblin_engine::persist::save_temp_path(engine));
        std::process::exit(1);
    }
    log::warning(if sig == libc::SIGINT {
        "Received SIGINT scheduling shutdown..."
    } else {
        "Received SIGTERM scheduling shutdown..."
    });
    engine.signal_shutdown(sig);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (config, config_file) = match parse_args(&args) {
        Ok(Invocation::Version) => {
            println!(
                "Goblin server v={} (Redis {} compatible) bits=64 malloc=jemalloc-5.3.0",
                goblin_engine::VERSION,
                goblin_engine::REDIS_VERSION
            );
            return;
        }
        Ok(Invocation::Help) => {
            print!("{}", usage());
            return;
        }
        Ok(Invocation::Run {
            config,
            config_file,
        }) => (*config, config_file),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    // Redis's THPDisable: with disable-thp yes (the default) the process
    // gets no transparent huge pages, whatever jemalloc asks for below.
    if config.disable_thp() {
        // SAFETY: prctl with PR_SET_THP_DISABLE takes plain integers.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    }
    log::configure(&config.logfile(), &config.loglevel());
    goblin_engine::log::set_sink(log::engine_sink);
    goblin_server::crash::install(&config.logfile(), config.crash_log_enabled());
    let dir = config.dir();
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("Can't create the data directory '{dir}': {e}");
        std::process::exit(1);
    }
    goblin_server::install_jemalloc_stats();
    // setOOMScoreAdj at startup: a failure is logged and the server runs.
    let _ = goblin_engine::oom::apply(&config.oom_score_adj(), &config.oom_score_adj_values());
    if let Err(e) = goblin_server::limits::adjust_open_files_limit(&config) {
        log::warning(&e);
        std::process::exit(1);
    }

    let threads = match config.threads() {
        0 => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        n => n as usize,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("goblin-io")
        // Scripts run on these threads: the stack they need, so that they
        // run on it directly rather than on a segment of their own.
        .thread_stack_size(goblin_engine::scripting::lua::THREAD_STACK)
        .enable_all()
        .build()
        .expect("tokio runtime");

    runtime.block_on(async move {
        let engine = Engine::new(config);
        if let Some(path) = &config_file {
            engine.set_config_file(path.clone());
        }
        if let Err(e) = goblin_engine::commands::acl::load_at_startup(&engine) {
            log::warning(&e);
            std::process::exit(1);
        }
        let server = match Server::bind(engine.clone()).await {
            Ok(s) => s,
            Err(e) => {
                for line in e.to_string().lines() {
                    log::warning(line);
                }
                std::process::exit(1);
            }
        };
        log::notice(&format!(
            "Goblin {} starting, PID: {}, {} threads, {} shards",
            goblin_engine::VERSION,
            std::process::id(),
            threads,
            engine.keyspace().shard_count()
        ));
        // `replicaof`: the role is known before the data loads (a replica
        // resumes the history its snapshot recorded).
        let master = engine.config().replicaof();
        if let Some((host, port)) = master.split_once(' ') {
            match goblin_engine::repl::parse_master(host.as_bytes(), port.trim().as_bytes()) {
                Ok(Some(addr)) => goblin_engine::repl::set_master(&engine, addr),
                Ok(None) => {}
                Err(e) => {
                    log::warning(&format!("replicaof: {}", String::from_utf8_lossy(e.bytes())));
                    std::process::exit(1);
                }
            }
        }
        // The data comes back before the first client is served; a file
        // that cannot be read stops the server rather than starting empty.
        let loader = engine.clone();
        let loaded =
            tokio::task::spawn_blocking(move || goblin_engine::persist::load_on_start(&loader))
                .await
                .expect("loading task");
        if let Err(e) = loaded {
            for line in e.lines() {
                log::warning(line);
            }
            std::process::exit(1);
        }
        // One line (the Tcl suite counts them): the plain address, the
        // TLS one, or both.
        let tls = server.tls_local_addr();
        let ready = match (server.local_addr(), tls) {
            (addr, Some(tls)) if addr == tls => format!("tls on {tls}"),
            (addr, Some(tls)) => format!("tcp on {addr}, tls on {tls}"),
            (addr, None) => format!("tcp on {addr}"),
        };
        log::notice(&format!("Ready to accept connections {ready}"));
        if let Some(path) = server.unix_path() {
            log::notice(&format!("The server is now ready to accept connections at {path}"));
        }
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
            .expect("SIGINT handler");
        let run = server.run();
        tokio::pin!(run);
        // A signal is acted on from the cron's beat (Redis's serverCron),
        // so DEBUG PAUSE-CRON holds it and SHUTDOWN ABORT can cancel it;
        // the shutdown's save runs while signals are still heard.
        let mut beat = tokio::time::interval(std::time::Duration::from_millis(10));
        let mut saving: Option<tokio::task::JoinHandle<Result<(), String>>> = None;
        loop {
            tokio::select! {
                _ = &mut run => break, // SHUTDOWN saved what it had to before replying.
                _ = term.recv() => on_shutdown_signal(&engine, libc::SIGTERM),
                _ = int.recv() => on_shutdown_signal(&engine, libc::SIGINT),
                _ = beat.tick(), if saving.is_none() => {
                    let sig = engine.pending_shutdown_signal();
                    // A shutdown waiting for its replicas is the cron's to
                    // finish (it ends `run`) or cancel.
                    if sig != 0 && !engine.cron_paused() && !engine.shutdown_state().initiated() {
                        let setting = if sig == libc::SIGINT {
                            engine.config().shutdown_on_sigint()
                        } else {
                            engine.config().shutdown_on_sigterm()
                        };
                        let flags = goblin_engine::persist::ShutdownFlags::from_config(&setting);
                        if engine.begin_shutdown(flags) == goblin_engine::shutdown::Begun::Now {
                            let e = engine.clone();
                            saving = Some(tokio::task::spawn_blocking(move || {
                                goblin_engine::persist::prepare_shutdown(&e, flags)
                            }));
                        }
                    }
                }
                done = async { saving.as_mut().expect("a shutdown in progress").await }, if saving.is_some() => {
                    saving = None;
                    match done.expect("shutdown task") {
                        Ok(()) => break,
                        // Logged; the server keeps running (Redis's cancelShutdown).
                        Err(_) => {
                            engine.cancel_shutdown_signal();
                        }
                    }
                }
            }
        }
        goblin_server::remove_unix_socket(&engine);
        log::warning("Goblin is now ready to exit, bye bye...");
    });
    std::process::exit(0);
}
