//! The remote driver's choice of server-side step, against a scripted
//! server that offers only some of them: an operation the server cannot
//! do atomically is `Unsupported`, and nothing is sent for it (never an
//! INCRBY followed by a PEXPIRE).

use goblin::cache::{Cache, Error, Key};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// A server that answers COMMAND INFO saying it has only the commands in
/// `known`, INCRBY/DECRBY/GOBLIN.INCRTTL with fixed integers, and records
/// every command it receives; INFO is refused (as an ACL may).
async fn scripted_server(known: &'static [&'static str]) -> (String, Arc<Mutex<Vec<String>>>) {
    server_of_version(known, None).await
}

/// The same, with an INFO server that reports `version` as redis_version.
async fn server_of_version(
    known: &'static [&'static str],
    version: Option<&'static str>,
) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = log.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let log = log.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut read = BufReader::new(read);
                while let Some(args) = read_command(&mut read).await {
                    let name = args[0].to_ascii_uppercase();
                    log.lock().unwrap().push(name.clone());
                    let reply = match name.as_str() {
                        "COMMAND" => {
                            let mut r = format!("*{}\r\n", args.len() - 2);
                            for a in &args[2..] {
                                if known.iter().any(|k| k.eq_ignore_ascii_case(a)) {
                                    r.push_str(&format!("*1\r\n${}\r\n{}\r\n", a.len(), a));
                                } else {
                                    r.push_str("*-1\r\n");
                                }
                            }
                            r
                        }
                        "INCRBY" | "DECRBY" => ":7\r\n".to_string(),
                        "GOBLIN.INCRTTL" => "*2\r\n:1\r\n:60000\r\n".to_string(),
                        "CLIENT" | "SELECT" => "+OK\r\n".to_string(),
                        "INFO" => match version {
                            Some(v) => {
                                let text = format!("# Server\r\nredis_version:{v}\r\n");
                                format!("${}\r\n{text}\r\n", text.len())
                            }
                            None => {
                                "-NOPERM this user has no permissions to run the 'info' command\r\n"
                                    .to_string()
                            }
                        },
                        _ => "-ERR unknown command\r\n".to_string(),
                    };
                    if write.write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("redis://{addr}/"), seen)
}

/// One RESP multibulk request.
async fn read_command<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> Option<Vec<String>> {
    let mut line = String::new();
    if r.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let n: usize = line.trim_end().strip_prefix('*')?.parse().ok()?;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        line.clear();
        r.read_line(&mut line).await.ok()?;
        let len: usize = line.trim_end().strip_prefix('$')?.parse().ok()?;
        let mut buf = vec![0u8; len + 2];
        r.read_exact(&mut buf).await.ok()?;
        buf.truncate(len);
        args.push(String::from_utf8(buf).ok()?);
    }
    Some(args)
}

fn commands_after(log: &Mutex<Vec<String>>, n: usize) -> Vec<String> {
    log.lock().unwrap()[n..].to_vec()
}

#[tokio::test]
async fn without_goblin_commands_or_scripting_the_atomic_steps_are_unsupported() {
    let (url, log) = scripted_server(&[]).await;
    let cache = Cache::connect(&url).await.unwrap();
    let k = Key::<i64>::new("k");
    let before = log.lock().unwrap().len();
    assert!(matches!(
        cache
            .increment_with_ttl(&k, 1, Duration::from_secs(1))
            .await,
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(
        cache.decrement(&k, i64::MIN).await,
        Err(Error::Unsupported(_))
    ));
    assert_eq!(commands_after(&log, before), Vec::<String>::new());
    // What a single native command does still works.
    assert_eq!(cache.increment(&k, 1).await.unwrap(), 7);
    assert_eq!(cache.decrement(&k, 1).await.unwrap(), 7);
    assert_eq!(commands_after(&log, before), ["INCRBY", "DECRBY"]);
}

#[tokio::test]
async fn goblin_incrttl_is_used_where_the_server_has_it() {
    let (url, log) = scripted_server(&["GOBLIN.INCRTTL"]).await;
    let cache = Cache::connect(&url).await.unwrap();
    let k = Key::<i64>::new("k");
    let before = log.lock().unwrap().len();
    let (count, left) = cache
        .increment_with_ttl(&k, 1, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!((count, left), (1, Duration::from_secs(60)));
    // No GOBLIN.DECRBY and no scripting: i64::MIN cannot be subtracted.
    assert!(matches!(
        cache.decrement(&k, i64::MIN).await,
        Err(Error::Unsupported(_))
    ));
    assert_eq!(commands_after(&log, before), ["GOBLIN.INCRTTL"]);
}

#[tokio::test]
async fn a_lost_connection_leaves_the_outcome_unknown() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("redis://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (read, mut write) = stream.into_split();
        let mut read = BufReader::new(read);
        while let Some(args) = read_command(&mut read).await {
            match args[0].to_ascii_uppercase().as_str() {
                // Take the increment, and hang up before answering.
                "INCRBY" => return,
                "COMMAND" => write.write_all(b"*0\r\n").await.unwrap(),
                _ => write.write_all(b"+OK\r\n").await.unwrap(),
            }
        }
    });
    let cache = Cache::connect(&url).await.unwrap();
    let err = cache.increment(&Key::<i64>::new("k"), 1).await.unwrap_err();
    assert!(matches!(err, Error::Transport(_)), "{err:?}");
    assert!(err.outcome_unknown());
}

#[tokio::test]
async fn connecting_to_nothing_is_a_connect_error() {
    // A port that was free a moment ago.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = Cache::connect(&format!("redis://127.0.0.1:{port}/"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Connect(_)), "{err:?}");
    assert!(!err.outcome_unknown());
}

#[tokio::test]
async fn a_redis_older_than_7_is_refused_on_connect() {
    let (url, log) = server_of_version(&["EVALSHA", "EVAL"], Some("6.2.14")).await;
    let err = Cache::connect(&url).await.unwrap_err();
    assert!(
        matches!(&err, Error::ServerVersion(v) if v == "6.2.14"),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("needs Redis 7.0 or later"),
        "{err}"
    );
    // Nothing but the handshake and INFO was sent.
    let sent = log.lock().unwrap().clone();
    assert!(
        sent.iter().all(|c| c == "CLIENT" || c == "INFO"),
        "{sent:?}"
    );
}

#[tokio::test]
async fn scripts_are_used_only_where_the_server_says_it_is_redis_7() {
    let (url, _) = server_of_version(&["EVALSHA", "EVAL"], Some("7.0.15")).await;
    let cache = Cache::connect(&url).await.unwrap();
    assert!(format!("{cache:?}").contains("scripts: true"), "{cache:?}");
    // A server that refuses INFO may be older: no scripts, so the steps
    // that need one are Unsupported rather than half applied.
    let (url, log) = scripted_server(&["EVALSHA", "EVAL"]).await;
    let cache = Cache::connect(&url).await.unwrap();
    assert!(format!("{cache:?}").contains("scripts: false"), "{cache:?}");
    let before = log.lock().unwrap().len();
    assert!(matches!(
        cache
            .increment_with_ttl(&Key::<i64>::new("k"), 1, Duration::from_secs(1))
            .await,
        Err(Error::Unsupported(_))
    ));
    assert_eq!(commands_after(&log, before), Vec::<String>::new());
}
