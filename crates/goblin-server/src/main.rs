//! `goblin-server`: starts Goblin on 127.0.0.1:6379 with its data in ./data
//! unless told otherwise (see `goblin-server --help`).

use goblin_engine::Engine;
use goblin_server::config::{parse_args, usage, Invocation};
use goblin_server::{log, Server};

// jemalloc, as Redis uses: low fragmentation for many small objects, and
// the statistics behind INFO memory.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
        }) => (config, config_file),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    log::configure(&config.get("logfile"), &config.get("loglevel"));
    goblin_engine::scripting::set_log_sink(log::at_level);
    let dir = config.get("dir");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("Can't create the data directory '{dir}': {e}");
        std::process::exit(1);
    }
    goblin_server::install_jemalloc_stats();
    goblin_engine::log::set_sink(log::warning);

    let threads = match config.get_i64("threads") {
        0 => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        n => n as usize,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("goblin-io")
        .enable_all()
        .build()
        .expect("tokio runtime");

    runtime.block_on(async move {
        let engine = Engine::new(config);
        if let Some(path) = &config_file {
            *engine.config_file.lock() = path.clone();
        }
        let server = match Server::bind(engine.clone()).await {
            Ok(s) => s,
            Err(e) => {
                log::warning(&e.to_string());
                std::process::exit(1);
            }
        };
        log::notice(&format!(
            "Goblin {} starting, pid={}, {} threads, {} shards",
            goblin_engine::VERSION,
            std::process::id(),
            threads,
            engine.keyspace.shard_count()
        ));
        log::notice(&format!("Ready to accept connections tcp on {}", server.local_addr()));
        let stop = async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
            tokio::select! {
                _ = term.recv() => log::warning("Received SIGTERM scheduling shutdown..."),
                _ = tokio::signal::ctrl_c() => log::warning("Received SIGINT scheduling shutdown..."),
            }
        };
        tokio::select! {
            mode = server.run() => log::warning(&format!("User requested shutdown ({mode:?})...")),
            _ = stop => {}
        }
        log::warning("Goblin is now ready to exit, bye bye...");
    });
    std::process::exit(0);
}
