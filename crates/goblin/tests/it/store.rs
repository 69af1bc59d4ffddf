//! `Store::execute`: the server's semantics in-process, one fresh client
//! per call, and blocking commands that wait without blocking the caller.

use goblin::{Error, ErrorText, Reply, Store};
use std::time::Duration;

fn bulk(s: &str) -> Reply {
    Reply::Bulk(s.as_bytes().to_vec())
}

#[tokio::test]
async fn commands_reply_as_over_the_network() {
    let store = Store::open_in_memory();
    assert_eq!(
        store.execute(["PING"]).await.unwrap(),
        Reply::Status("PONG".into())
    );
    assert_eq!(
        store.execute(["SET", "k", "v"]).await.unwrap(),
        Reply::Status("OK".into())
    );
    assert_eq!(store.execute(["GET", "k"]).await.unwrap(), bulk("v"));
    assert_eq!(store.execute(["GET", "absent"]).await.unwrap(), Reply::Nil);
    assert_eq!(
        store
            .execute(vec![b"APPEND".to_vec(), b"k".to_vec(), b"w".to_vec()])
            .await
            .unwrap(),
        Reply::Int(2)
    );
    // RESP3: a map and a double, as HELLO 3 clients get them.
    store.execute(["HSET", "h", "f", "1"]).await.unwrap();
    assert_eq!(
        store.execute(["HGETALL", "h"]).await.unwrap(),
        Reply::Map(vec![(bulk("f"), bulk("1"))])
    );
    store.execute(["ZADD", "z", "1.5", "m"]).await.unwrap();
    assert_eq!(
        store.execute(["ZSCORE", "z", "m"]).await.unwrap(),
        Reply::Double(1.5)
    );
    // Errors carry Redis's text.
    match store.execute(["INCR", "k"]).await {
        Err(Error::Reply(text)) => assert_eq!(text, "ERR value is not an integer or out of range"),
        other => panic!("{other:?}"),
    }
    match store.execute(["NOSUCH", "a"]).await {
        Err(Error::Reply(text)) => {
            assert!(text.starts_with("ERR unknown command 'NOSUCH'"), "{text}")
        }
        other => panic!("{other:?}"),
    }
    match store.execute(["GET"]).await {
        Err(Error::Reply(text)) => {
            assert_eq!(text, "ERR wrong number of arguments for 'get' command")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        store.execute(Vec::<&str>::new()).await,
        Err(Error::NoReply)
    ));
    // A clone is the same store.
    let other = store.clone();
    assert_eq!(other.execute(["GET", "k"]).await.unwrap(), bulk("vw"));
}

#[tokio::test]
async fn nothing_carries_over_from_one_call_to_the_next() {
    let store = Store::open_in_memory();
    store.execute(["SET", "k", "db0"]).await.unwrap();
    // SELECT applies to its own call only.
    store.execute(["SELECT", "1"]).await.unwrap();
    assert_eq!(store.execute(["GET", "k"]).await.unwrap(), bulk("db0"));
    // A MULTI left open does not queue the next call's command.
    assert_eq!(
        store.execute(["MULTI"]).await.unwrap(),
        Reply::Status("OK".into())
    );
    assert_eq!(store.execute(["INCR", "n"]).await.unwrap(), Reply::Int(1));
    match store.execute(["EXEC"]).await {
        Err(Error::Reply(text)) => assert_eq!(text, "ERR EXEC without MULTI"),
        other => panic!("{other:?}"),
    }
    // HELLO 2 does not turn later replies into RESP2.
    store.execute(["HELLO", "2"]).await.unwrap();
    store.execute(["HSET", "h", "f", "v"]).await.unwrap();
    assert!(matches!(
        store.execute(["HGETALL", "h"]).await.unwrap(),
        Reply::Map(_)
    ));
    // CLIENT REPLY OFF silences its own call only.
    assert!(matches!(
        store.execute(["CLIENT", "REPLY", "OFF"]).await,
        Err(Error::NoReply)
    ));
    assert_eq!(store.execute(["GET", "k"]).await.unwrap(), bulk("db0"));
    store.execute(["CLIENT", "SETNAME", "named"]).await.unwrap();
    assert_eq!(
        store.execute(["CLIENT", "GETNAME"]).await.unwrap(),
        Reply::Nil
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_pop_waits_for_a_push_from_another_task() {
    let store = Store::open_in_memory();
    let waiter = {
        let store = store.clone();
        tokio::spawn(async move { store.execute(["BLPOP", "jobs", "0"]).await })
    };
    // Wait until the pop is registered as blocked, then push.
    loop {
        let info = match store.execute(["INFO", "clients"]).await.unwrap() {
            Reply::Verbatim { text, .. } | Reply::Bulk(text) => String::from_utf8(text).unwrap(),
            other => panic!("{other:?}"),
        };
        if info.contains("blocked_clients:1") {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(
        store.execute(["RPUSH", "jobs", "job-1"]).await.unwrap(),
        Reply::Int(1)
    );
    assert_eq!(
        waiter.await.unwrap().unwrap(),
        Reply::Array(vec![bulk("jobs"), bulk("job-1")])
    );
    // The popped element is gone: the waiter took it.
    assert_eq!(
        store.execute(["LLEN", "jobs"]).await.unwrap(),
        Reply::Int(0)
    );
}

#[tokio::test]
async fn a_blocking_pop_times_out_with_a_null_reply() {
    let store = Store::open_in_memory();
    assert_eq!(
        store.execute(["BLPOP", "empty", "0.01"]).await.unwrap(),
        Reply::Nil
    );
    // With data present it does not block at all.
    store.execute(["RPUSH", "full", "x"]).await.unwrap();
    assert_eq!(
        store.execute(["BLPOP", "full", "0"]).await.unwrap(),
        Reply::Array(vec![bulk("full"), bulk("x")])
    );
}

#[tokio::test]
async fn dropping_a_waiting_call_gives_the_wait_up() {
    let store = Store::open_in_memory();
    let wait = store.execute(["BLPOP", "jobs", "0"]);
    // Poll it until it waits, then drop it.
    assert!(tokio::time::timeout(Duration::from_millis(20), wait)
        .await
        .is_err());
    let info = match store.execute(["INFO", "clients"]).await.unwrap() {
        Reply::Verbatim { text, .. } | Reply::Bulk(text) => String::from_utf8(text).unwrap(),
        other => panic!("{other:?}"),
    };
    assert!(info.contains("blocked_clients:0"), "{info}");
    // A push now stays in the list: nobody is waiting for it.
    store.execute(["RPUSH", "jobs", "j"]).await.unwrap();
    assert_eq!(
        store.execute(["LLEN", "jobs"]).await.unwrap(),
        Reply::Int(1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_callers_share_one_keyspace() {
    let store = Store::open_in_memory();
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                for _ in 0..100 {
                    store.execute(["INCR", "n"]).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(store.execute(["GET", "n"]).await.unwrap(), bulk("3200"));
}

/// WAIT in-process: a store has no replicas, so the reply comes at the
/// timeout with the count of those that acknowledged (none), from the
/// Store and from a Session alike.
#[tokio::test]
async fn wait_answers_in_process_at_its_timeout() {
    let store = Store::open_in_memory();
    store.execute(["SET", "k", "v"]).await.unwrap();
    assert_eq!(
        store.execute(["WAIT", "0", "0"]).await.unwrap(),
        Reply::Int(0)
    );
    assert_eq!(
        store.execute(["WAIT", "1", "50"]).await.unwrap(),
        Reply::Int(0)
    );
    let mut session = store.session();
    session.execute(["SET", "k", "w"]).await.unwrap();
    assert_eq!(
        session.execute(["WAIT", "2", "20"]).await.unwrap(),
        Reply::Int(0)
    );
    // The session goes on after the wait.
    assert_eq!(session.execute(["GET", "k"]).await.unwrap(), bulk("w"));
}

/// WAITAOF in-process: it answers once the store's append-only file is on
/// disk up to the caller's write (numlocal 1), and at its timeout with the
/// replicas that acknowledged theirs (none).
#[tokio::test]
async fn waitaof_answers_in_process_once_the_file_is_on_disk() {
    let dir = temp_dir("waitaof");
    let config = goblin::Config::new();
    config.set_initial("dir", dir.to_str().unwrap()).unwrap();
    config.set_initial("appendfsync", "everysec").unwrap();
    let store = Store::open_with_config(config).unwrap();
    let mut session = store.session();
    session.execute(["SET", "k", "v"]).await.unwrap();
    assert_eq!(
        session.execute(["WAITAOF", "1", "0", "0"]).await.unwrap(),
        Reply::Array(vec![Reply::Int(1), Reply::Int(0)])
    );
    session.execute(["SET", "k", "w"]).await.unwrap();
    match session.execute(["WAITAOF", "0", "1", "30"]).await.unwrap() {
        Reply::Array(counts) => {
            assert_eq!(counts.len(), 2);
            assert_eq!(counts[1], Reply::Int(0), "no replica acknowledged");
        }
        other => panic!("{other:?}"),
    }
    drop(session);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("goblin-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[tokio::test]
async fn a_store_opened_on_a_directory_keeps_its_data_across_reopening() {
    let dir = temp_dir("reopen");
    {
        let store = Store::open(&dir).unwrap();
        assert!(dir.is_dir(), "the directory is created");
        store.execute(["SET", "kept", "v"]).await.unwrap();
        store
            .execute(["SET", "ttl", "v", "EX", "1000"])
            .await
            .unwrap();
        store.execute(["HSET", "h", "f", "1"]).await.unwrap();
        store.execute(["INCRBY", "n", "41"]).await.unwrap();
        store.execute(["INCR", "n"]).await.unwrap();
    }
    assert!(dir.join("appendonlydir").is_dir(), "an append-only file");
    assert!(dir.join("dump.rdb").is_file(), "a snapshot on close");
    let store = Store::open(&dir).unwrap();
    assert_eq!(store.execute(["GET", "kept"]).await.unwrap(), bulk("v"));
    assert_eq!(store.execute(["GET", "n"]).await.unwrap(), bulk("42"));
    assert_eq!(store.execute(["HGET", "h", "f"]).await.unwrap(), bulk("1"));
    match store.execute(["TTL", "ttl"]).await.unwrap() {
        Reply::Int(t) => assert!((990..=1000).contains(&t), "{t}"),
        other => panic!("{other:?}"),
    }
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A copy of a store's directory as a crash leaves it: what the files
/// hold now, without the lock of the store still open on it (a process
/// that dies releases its lock).
fn copy_as_after_a_crash(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let copy = temp_dir(name);
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(dir)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success(), "cp -a {}", dir.display());
    std::fs::remove_file(copy.join("LOCK")).unwrap();
    copy
}

#[tokio::test]
async fn a_store_under_appendfsync_always_has_every_write_in_its_log() {
    let dir = temp_dir("always");
    let open = |dir: &std::path::Path| {
        let config = goblin::Config::new();
        config.set_initial("dir", dir.to_str().unwrap()).unwrap();
        config.set_initial("appendfsync", "always").unwrap();
        config.set_initial("save", "").unwrap();
        Store::open_with_config(config).unwrap()
    };
    let store = open(&dir);
    for i in 0..100 {
        store
            .execute(["RPUSH", "log", &i.to_string()])
            .await
            .unwrap();
    }
    // Without the close (no snapshot, no final flush): the log alone has
    // them, as after a crash.
    std::mem::forget(store);
    let crashed = copy_as_after_a_crash(&dir, "always-crashed");
    let store = open(&crashed);
    assert_eq!(
        store.execute(["LLEN", "log"]).await.unwrap(),
        Reply::Int(100)
    );
    drop(store);
    std::fs::remove_dir_all(&crashed).unwrap();
}

#[test]
fn a_directory_holding_a_corrupt_file_is_refused() {
    let dir = temp_dir("corrupt");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("dump.rdb"), b"REDIS0010garbage").unwrap();
    let config = goblin::Config::new();
    config.set_initial("dir", dir.to_str().unwrap()).unwrap();
    config.set_initial("appendonly", "no").unwrap();
    match Store::open_with_config(config) {
        Err(Error::Persistence(goblin::PersistenceError::Load(text))) => {
            assert!(text.contains("RDB"), "{text}")
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn caches_share_counts_only_through_a_shared_store() {
    use goblin::cache::{Cache, Key};
    let views = Key::<i64>::new("views");
    let shared = Store::open_in_memory();
    let (a, b) = (Cache::embedded(shared.clone()), Cache::embedded(shared));
    assert_eq!(a.increment(&views, 1).await.unwrap(), 1);
    assert_eq!(b.increment(&views, 1).await.unwrap(), 2);
    // A separate store keeps its own total.
    let separate = Cache::embedded(Store::open_in_memory());
    assert_eq!(separate.increment(&views, 1).await.unwrap(), 1);
    assert_eq!(a.get(&views).await.unwrap(), Some(2));
}

#[tokio::test]
async fn publish_reaches_engine_subscribers_and_subscribe_leaves_with_its_call() {
    let store = Store::open_in_memory();
    assert_eq!(
        store.execute(["PUBLISH", "ch", "nobody"]).await.unwrap(),
        Reply::Int(0)
    );
    // The call subscribes, gets its confirmations as RESP3 pushes, and
    // leaves with its session.
    assert_eq!(
        store.execute(["SUBSCRIBE", "ch", "other"]).await.unwrap(),
        Reply::Array(vec![
            Reply::Push(vec![bulk("subscribe"), bulk("ch"), Reply::Int(1)]),
            Reply::Push(vec![bulk("subscribe"), bulk("other"), Reply::Int(2)]),
        ])
    );
    assert_eq!(
        store.execute(["PUBSUB", "NUMSUB", "ch"]).await.unwrap(),
        Reply::Array(vec![bulk("ch"), Reply::Int(0)])
    );
    // A session kept subscribed receives what the store publishes.
    let engine = store.engine();
    let mut session = engine.session(goblin_engine::ConnInfo::embedded());
    session.execute(&[b"HELLO", b"3"]);
    session.execute(&[b"SUBSCRIBE", b"ch"]);
    session.out.buf.clear();
    assert_eq!(
        store.execute(["PUBLISH", "ch", "hi"]).await.unwrap(),
        Reply::Int(1)
    );
    assert!(session.deliver_pushes());
    assert_eq!(
        Reply::decode_all(&session.out.buf).unwrap(),
        vec![Reply::Push(vec![bulk("message"), bulk("ch"), bulk("hi")])]
    );
    drop(session);
    assert_eq!(
        store.execute(["PUBLISH", "ch", "gone"]).await.unwrap(),
        Reply::Int(0)
    );
}

/// Regression: expired keys were recorded for the append-only file under
/// a switch shared by the whole process, so one store turning its log off
/// (CONFIG SET appendonly no, or closing) stopped every other store of the
/// process from logging its expiries, whose replay then brought nothing
/// back but kept no DEL either: a replica of the log would differ.
#[tokio::test]
async fn a_store_that_stops_its_log_leaves_another_stores_expiries_logged() {
    let open = |dir: &std::path::Path| {
        let config = goblin::Config::new();
        config.set_initial("dir", dir.to_str().unwrap()).unwrap();
        config.set_initial("appendonly", "yes").unwrap();
        config.set_initial("appendfsync", "always").unwrap();
        config.set_initial("save", "").unwrap();
        Store::open_with_config(config).unwrap()
    };
    let (dir_a, dir_b) = (temp_dir("expiry-log-a"), temp_dir("expiry-log-b"));
    let (a, b) = (open(&dir_a), open(&dir_b));
    b.execute(["CONFIG", "SET", "appendonly", "no"])
        .await
        .unwrap();
    a.execute(["SET", "k", "v", "PX", "1"]).await.unwrap();
    // The key's millisecond passes; the look-up that finds it expired
    // deletes it, which the log records as a DEL.
    while a.execute(["PTTL", "k"]).await.unwrap() != Reply::Int(-2) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // A read's reply does not wait for the DEL it logged; a write's waits
    // for everything logged before it to be on disk.
    a.execute(["SET", "after", "v"]).await.unwrap();
    let mut log = Vec::new();
    for file in std::fs::read_dir(dir_a.join("appendonlydir")).unwrap() {
        let path = file.unwrap().path();
        if path.to_string_lossy().ends_with(".incr.aof") {
            log.extend(std::fs::read(path).unwrap());
        }
    }
    let del = b"*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n";
    assert!(
        log.windows(del.len()).any(|w| w == del),
        "no DEL of the expired key in {:?}",
        String::from_utf8_lossy(&log)
    );
    drop((a, b));
    std::fs::remove_dir_all(&dir_a).unwrap();
    std::fs::remove_dir_all(&dir_b).unwrap();
}

#[tokio::test]
async fn error_replies_keep_bytes_that_are_not_utf8() {
    let store = Store::open_in_memory();
    match store.execute([b"\xff".as_slice(), b"a\xfe"]).await {
        Err(Error::Reply(text)) => {
            assert_eq!(
                text.as_bytes(),
                b"ERR unknown command '\xff', with args beginning with: 'a\xfe' "
            );
            assert_eq!(text.code(), b"ERR");
            assert!(text.to_str().is_err());
            // Display is lossy.
            assert_eq!(
                text.to_string(),
                "ERR unknown command '\u{fffd}', with args beginning with: 'a\u{fffd}' "
            );
        }
        other => panic!("{other:?}"),
    }
    // An error inside an array stays an element, with its bytes.
    let reply = store
        .execute([
            b"EVAL".as_slice(),
            b"return {1, redis.error_reply('\xff\xfe')}",
            b"0",
        ])
        .await
        .unwrap();
    assert_eq!(
        reply,
        Reply::Array(vec![
            Reply::Int(1),
            Reply::Error(ErrorText::new(b"ERR \xff\xfe".to_vec()))
        ])
    );
}

/// A store given a memory bound of its own stays within it under a write
/// loop ten times its size, evicting as its policy says; a second store in
/// the same process, unbounded and growing, takes nothing from it, and the
/// first never evicts for the second's data.
#[tokio::test]
async fn a_bounded_store_stays_within_its_own_bound() {
    use goblin::EvictionPolicy;
    const BOUND: u64 = 10 << 20;
    let cache = Store::builder()
        .max_memory(BOUND)
        .eviction_policy(EvictionPolicy::AllKeysLru)
        .open()
        .unwrap();
    let other = Store::open_in_memory();
    let value = vec![b'v'; 1000];
    let mut most = 0;
    for i in 0..100_000u32 {
        let key = format!("key:{i}");
        cache
            .execute([b"SET".as_slice(), key.as_bytes(), &value])
            .await
            .unwrap();
        if i % 1000 == 0 {
            most = most.max(cache.engine().used_memory());
        }
    }
    assert!(most <= BOUND + 64 * 1024, "used_memory reached {most}");
    let evicted = info_u64(&cache, "evicted_keys").await;
    let kept = match cache.execute(["DBSIZE"]).await.unwrap() {
        Reply::Int(n) => n as u64,
        other => panic!("{other:?}"),
    };
    assert!(kept > 5000 && kept < 11_000, "{kept} keys kept");
    assert_eq!(kept + evicted, 100_000);

    // The other store grows past the first one's bound; the first evicts
    // nothing for it.
    for i in 0..30_000u32 {
        other
            .execute([b"SET".as_slice(), format!("big:{i}").as_bytes(), &value])
            .await
            .unwrap();
    }
    assert!(other.engine().used_memory() > 3 * BOUND);
    assert_eq!(info_u64(&cache, "evicted_keys").await, evicted);
    assert_eq!(info_u64(&other, "evicted_keys").await, 0);
    cache.execute(["SET", "one-more", "v"]).await.unwrap();
    assert_eq!(cache.execute(["GET", "one-more"]).await.unwrap(), bulk("v"));
}

/// A store without an eviction policy refuses writes over its bound with
/// Redis's OOM error, and still reads.
#[tokio::test]
async fn a_bounded_store_without_eviction_refuses_writes() {
    let store = Store::builder().max_memory(1 << 20).open().unwrap();
    let value = vec![b'v'; 1000];
    let mut refused = None;
    for i in 0..10_000u32 {
        if let Err(e) = store
            .execute([b"SET".as_slice(), format!("k:{i}").as_bytes(), &value])
            .await
        {
            refused = Some((i, e.to_string()));
            break;
        }
    }
    let (at, text) = refused.expect("a write refused over the bound");
    assert!(at > 100, "refused after {at} writes");
    assert_eq!(
        text,
        "OOM command not allowed when used memory > 'maxmemory'."
    );
    assert_eq!(
        store.execute(["EXISTS", "k:0"]).await.unwrap(),
        Reply::Int(1)
    );
    assert!(matches!(
        Store::builder().set("maxmemory-policy", "sometimes").open(),
        Err(Error::Config(_))
    ));
}

async fn info_u64(store: &Store, field: &str) -> u64 {
    let info = match store.execute(["INFO", "stats"]).await.unwrap() {
        Reply::Bulk(b) | Reply::Verbatim { text: b, .. } => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field}"))
        .trim()
        .parse()
        .unwrap()
}

/// `close` on one handle saves, and the handles still open go on with
/// the append-only file on: what they write is in the log, and there
/// after a reopen (it was switched off, and those writes lost).
#[tokio::test]
async fn closing_one_handle_leaves_the_log_on_for_the_others() {
    let dir = temp_dir("close-one-handle");
    let store = Store::builder()
        .dir(&dir)
        .append_only(true)
        .no_snapshots()
        .open()
        .unwrap();
    let other = store.clone();
    store.execute(["SET", "before", "close"]).await.unwrap();
    store.close().await.unwrap();
    other.execute(["SET", "after", "close"]).await.unwrap();
    let info = match other.execute(["INFO", "persistence"]).await.unwrap() {
        Reply::Verbatim { text, .. } | Reply::Bulk(text) => String::from_utf8(text).unwrap(),
        reply => panic!("{reply:?}"),
    };
    assert!(info.contains("\r\naof_enabled:1\r\n"), "{info}");
    drop(other);
    let store = Store::open(&dir).unwrap();
    assert_eq!(
        store.execute(["GET", "before"]).await.unwrap(),
        bulk("close")
    );
    assert_eq!(
        store.execute(["GET", "after"]).await.unwrap(),
        bulk("close")
    );
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A directory is one store's: a second open is refused while the first
/// is open (each would replace the other's files, the last to close
/// winning), and succeeds once it is closed.
#[tokio::test]
async fn a_second_store_on_the_same_directory_is_refused() {
    let dir = temp_dir("locked");
    let first = Store::open(&dir).unwrap();
    first.execute(["SET", "k", "first"]).await.unwrap();
    match Store::open(&dir) {
        Err(Error::DirectoryInUse(path)) => {
            assert_eq!(path.canonicalize().unwrap(), dir.canonicalize().unwrap())
        }
        other => panic!("a second store opened the directory: {other:?}"),
    }
    // Nor through the blocking API.
    assert!(matches!(
        goblin::blocking::Store::open(&dir),
        Err(Error::DirectoryInUse(_))
    ));
    first.close().await.unwrap();
    let second = Store::open(&dir).unwrap();
    assert_eq!(second.execute(["GET", "k"]).await.unwrap(), bulk("first"));
    drop(second);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The disk fills up: a write whose record cannot reach the append-only
/// file is an error, never Ok (its reply may not be trusted); later writes
/// are refused with Redis's MISCONF while reads go on; every write that
/// returned Ok is there after a reopen with room again.
#[tokio::test]
async fn a_write_that_cannot_reach_the_log_is_an_error() {
    use crate::support::tmpfs::Tmpfs;
    for fsync in [goblin::AppendFsync::Always, goblin::AppendFsync::EverySec] {
        let disk = Tmpfs::mount(&format!("store-{fsync:?}"), "2m");
        let open = || {
            Store::builder()
                .dir(disk.path())
                .append_only(true)
                .append_fsync(fsync)
                .no_snapshots()
                .open()
                .unwrap()
        };
        let store = open();
        let value = "v".repeat(1000);
        let mut acked = Vec::new();
        let (mut log_errors, mut refused) = (0, 0);
        for i in 0..10_000 {
            let key = format!("k{i}");
            match store.execute(["SET", &key, &value]).await {
                Ok(_) => acked.push(key),
                Err(Error::Persistence(goblin::PersistenceError::AppendOnlyFile(e))) => {
                    assert_eq!(e.raw_os_error(), Some(28), "{fsync:?}: {e}");
                    log_errors += 1;
                }
                Err(Error::Reply(text)) => {
                    assert_eq!(
                        text.to_string(),
                        "MISCONF Errors writing to the AOF file: No space left on device"
                    );
                    refused += 1;
                    if refused == 20 {
                        break;
                    }
                }
                Err(e) => panic!("{fsync:?}: {e}"),
            }
        }
        assert!(log_errors >= 1, "{fsync:?}: no write failed on a full disk");
        assert_eq!(refused, 20, "{fsync:?}: writes were not refused");
        assert_eq!(
            store.execute(["GET", &acked[0]]).await.unwrap(),
            bulk(&value),
            "{fsync:?}: reads go on"
        );
        // Left as a crash leaves it: no final flush.
        std::mem::forget(store);
        disk.resize("64m");
        let copy = copy_as_after_a_crash(disk.path(), &format!("store-{fsync:?}-copy"));
        let store = Store::builder()
            .dir(&copy)
            .append_only(true)
            .no_snapshots()
            .open()
            .unwrap();
        for key in &acked {
            assert_eq!(
                store.execute(["GET", key]).await.unwrap(),
                bulk(&value),
                "{fsync:?}: {key} was acknowledged"
            );
        }
        drop(store);
        std::fs::remove_dir_all(&copy).unwrap();
    }
}
