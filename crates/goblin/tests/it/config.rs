//! `StoreConfig`'s typed settings and errors, and `Store::close`.

use goblin::{
    AppendFsync, ConfigError, Error, EvictionPolicy, PersistenceError, Reply, Store, StoreConfig,
};
use std::sync::{Mutex, Once};
use std::time::Duration;

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("goblin-config-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

async fn config_get(store: &Store, name: &str) -> String {
    match store.execute(["CONFIG", "GET", name]).await.unwrap() {
        Reply::Map(pairs) => match &pairs[..] {
            [(_, Reply::Bulk(v))] => String::from_utf8(v.clone()).unwrap(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn typed_settings_reach_the_engine() {
    let dir = temp_dir("typed");
    let store = StoreConfig::new()
        .dir(&dir)
        .append_only(true)
        .append_fsync(AppendFsync::No)
        .save_point(Duration::from_secs(900), 1)
        .save_point(Duration::from_secs(60), 5000)
        .max_memory(32 << 20)
        .eviction_policy(EvictionPolicy::VolatileTtl)
        .databases(2)
        .set("hz", "20")
        .open()
        .unwrap();
    assert_eq!(config_get(&store, "appendonly").await, "yes");
    assert_eq!(config_get(&store, "appendfsync").await, "no");
    assert_eq!(config_get(&store, "save").await, "900 1 60 5000");
    assert_eq!(
        config_get(&store, "maxmemory").await,
        (32u64 << 20).to_string()
    );
    assert_eq!(config_get(&store, "maxmemory-policy").await, "volatile-ttl");
    assert_eq!(config_get(&store, "databases").await, "2");
    assert_eq!(config_get(&store, "hz").await, "20");
    assert_eq!(
        config_get(&store, "dir").await,
        dir.canonicalize().unwrap().to_str().unwrap()
    );
    let mut s = store.session();
    s.execute(["SELECT", "1"]).await.unwrap();
    match s.execute(["SELECT", "2"]).await {
        Err(Error::Reply(text)) => assert_eq!(text, "ERR DB index is out of range"),
        other => panic!("{other:?}"),
    }
    drop(s);
    store.close().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn an_in_memory_store_writes_nothing_unless_told_to() {
    let store = StoreConfig::new().open().unwrap();
    assert_eq!(config_get(&store, "save").await, "");
    assert_eq!(config_get(&store, "appendonly").await, "no");
    let dir = temp_dir("nosnap");
    let store = StoreConfig::new().no_snapshots().dir(&dir).open().unwrap();
    assert_eq!(config_get(&store, "save").await, "");
    assert_eq!(config_get(&store, "appendonly").await, "yes");
    store.close().await.unwrap();
    assert!(!dir.join("dump.rdb").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn refused_settings_are_typed_errors() {
    match StoreConfig::new().set("no-such-parameter", "1").open() {
        Err(Error::Config(ConfigError::UnknownParameter(name))) => {
            assert_eq!(name, "no-such-parameter")
        }
        other => panic!("{other:?}"),
    }
    match StoreConfig::new().set("appendfsync", "sometimes").open() {
        Err(Error::Config(ConfigError::InvalidValue {
            name,
            value,
            reason,
        })) => {
            assert_eq!(
                (name.as_str(), value.as_str()),
                ("appendfsync", "sometimes")
            );
            assert!(!reason.is_empty());
        }
        other => panic!("{other:?}"),
    }
    match StoreConfig::new().databases(0).open() {
        Err(Error::Config(ConfigError::InvalidValue { name, .. })) => assert_eq!(name, "databases"),
        other => panic!("{other:?}"),
    }
    // The old name of the builder is the same type.
    let _: goblin::StoreBuilder = Store::builder().max_memory(1 << 20);
}

#[tokio::test]
async fn close_saves_a_snapshot_that_the_next_open_loads() {
    let dir = temp_dir("close");
    let store = StoreConfig::new()
        .dir(&dir)
        .append_only(false)
        .open()
        .unwrap();
    store.execute(["SET", "kept", "v"]).await.unwrap();
    let clone = store.clone();
    // Not the last handle: it saves now, and the last one saves again.
    store.close().await.unwrap();
    assert!(dir.join("dump.rdb").is_file());
    clone.execute(["SET", "later", "w"]).await.unwrap();
    clone.close().await.unwrap();
    let store = Store::open(&dir).unwrap();
    assert_eq!(
        store.execute(["MGET", "kept", "later"]).await.unwrap(),
        Reply::Array(vec![Reply::Bulk(b"v".to_vec()), Reply::Bulk(b"w".to_vec())])
    );
    store.close().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The directory is removed under the store, so the final snapshot
/// cannot be written (a read-only directory would not stop root).
#[tokio::test]
async fn close_returns_the_error_when_the_directory_is_gone() {
    let dir = temp_dir("gone");
    let store = StoreConfig::new()
        .dir(&dir)
        .append_only(false)
        .open()
        .unwrap();
    store.execute(["SET", "k", "v"]).await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    match store.close().await {
        Err(Error::Persistence(PersistenceError::Snapshot(e))) => {
            assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_blocking_close_returns_the_error_too() {
    let dir = temp_dir("gone-blocking");
    let store =
        goblin::blocking::Store::with_config(StoreConfig::new().dir(&dir).append_only(false))
            .unwrap();
    store.execute(["SET", "k", "v"]).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(
        store.close(),
        Err(Error::Persistence(PersistenceError::Snapshot(_)))
    ));
}

/// What the crate logged through the `log` facade, in this test binary.
static LOGGED: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        LOGGED.lock().unwrap().push(format!(
            "{} {} {}",
            record.level(),
            record.target(),
            record.args()
        ));
    }
    fn flush(&self) {}
}

fn capture_log() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        log::set_logger(&Capture).unwrap();
        log::set_max_level(log::LevelFilter::Trace);
    });
}

#[tokio::test]
async fn a_store_dropped_without_close_logs_its_save_failure() {
    capture_log();
    let dir = temp_dir("drop-log");
    let store = StoreConfig::new()
        .dir(&dir)
        .append_only(false)
        .open()
        .unwrap();
    store.execute(["SET", "k", "v"]).await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    drop(store);
    let logged = LOGGED.lock().unwrap().clone();
    assert!(
        logged.iter().any(|l| l.starts_with("ERROR goblin")
            && l.contains("could not save")
            && l.contains("snapshot")),
        "{logged:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_dropped_on_a_multi_thread_runtime_has_saved_when_drop_returns() {
    let dir = temp_dir("drop-mt");
    let store = StoreConfig::new()
        .dir(&dir)
        .append_only(false)
        .open()
        .unwrap();
    store.execute(["SET", "k", "v"]).await.unwrap();
    drop(store);
    let store = Store::open(&dir).unwrap();
    assert_eq!(
        store.execute(["GET", "k"]).await.unwrap(),
        Reply::Bulk(b"v".to_vec())
    );
    store.close().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_write_is_in_the_log_file_before_its_reply_under_everysec() {
    let dir = temp_dir("everysec");
    let store = StoreConfig::new()
        .dir(&dir)
        .append_fsync(AppendFsync::EverySec)
        .no_snapshots()
        .open()
        .unwrap();
    store
        .execute(["SET", "logged-key", "logged-value"])
        .await
        .unwrap();
    let mut log = Vec::new();
    for entry in std::fs::read_dir(dir.join("appendonlydir")).unwrap() {
        let path = entry.unwrap().path();
        if path.to_str().unwrap().ends_with(".incr.aof") {
            log.extend(std::fs::read(path).unwrap());
        }
    }
    let text = String::from_utf8_lossy(&log);
    assert!(
        text.contains("logged-key") && text.contains("logged-value"),
        "{text}"
    );
    store.close().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
