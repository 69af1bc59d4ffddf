//! Server processes for tests that restart servers or compare files with
//! Redis: goblin-server (the binary under test) or Debian's redis-server,
//! each on a free port with a data directory of the test's choosing.

use redis::Connection;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "goblin-persist-{name}-{}-{}",
        std::process::id(),
        fastrand::u32(..)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A server process (goblin-server or redis-server) on its own port.
pub struct Proc {
    pub child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl Proc {
    /// A port found free may be taken by another test's server before this
    /// one binds it (the tests of a binary share its ports): the server
    /// then exits, or the other one answers in its place. Either way it is
    /// started again on another port.
    pub fn spawn(program: &str, dir: &Path, args: &[&str]) -> Proc {
        Proc::spawn_limited(program, dir, args, None)
    }

    /// `spawn`, with the process's open files limit (soft and hard) set to
    /// `nofile` when given.
    pub fn spawn_limited(program: &str, dir: &Path, args: &[&str], nofile: Option<u64>) -> Proc {
        for _ in 0..5 {
            if let Some(p) = Proc::try_spawn_on(program, dir, args, nofile, free_port()) {
                return p;
            }
        }
        panic!("{program} found no free port in 5 tries");
    }

    /// `spawn` on the given port (a server restarted where its replicas
    /// look for it): retried for a few seconds while the port is taken
    /// (by the server it replaces, still closing).
    pub fn spawn_on(program: &str, dir: &Path, args: &[&str], port: u16) -> Proc {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(p) = Proc::try_spawn_on(program, dir, args, None, port) {
                return p;
            }
            assert!(
                Instant::now() < deadline,
                "{program}: port {port} stayed taken"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts `program` on `port` and waits until it answers; None when the
    /// port turned out to be taken.
    fn try_spawn_on(
        program: &str,
        dir: &Path,
        args: &[&str],
        nofile: Option<u64>,
        port: u16,
    ) -> Option<Proc> {
        let log = dir.join(format!(
            "{}-{port}.log",
            Path::new(program).file_name().unwrap().to_string_lossy()
        ));
        let mut cmd = Command::new(program);
        cmd.args(["--port", &port.to_string(), "--dir", dir.to_str().unwrap()])
            .args(args);
        if let Some(n) = nofile {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit is async-signal-safe, and touches
            // nothing of the parent's.
            unsafe {
                cmd.pre_exec(move || {
                    let limit = libc::rlimit {
                        rlim_cur: n,
                        rlim_max: n,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        Proc::launch(cmd, program, port, log)
    }

    /// Runs `cmd` (a server that will listen on `port`) with its output
    /// going to `log`, and waits until it answers.
    fn launch(mut cmd: Command, program: &str, port: u16, log: PathBuf) -> Option<Proc> {
        let out = std::fs::File::create(&log).unwrap();
        cmd.stdout(Stdio::from(out.try_clone().unwrap()))
            .stderr(Stdio::from(out));
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program}: {e} (is it installed?)"));
        let mut p = Proc { child, port, log };
        p.wait_ready().then_some(p)
    }

    /// A Redis Sentinel (Debian's redis-sentinel) on a free port, with a
    /// configuration file of its own in `dir` made of `port`, `dir` and
    /// `lines` (Sentinel rewrites that file, so it is writable).
    pub fn sentinel(dir: &Path, lines: &[String]) -> Proc {
        for _ in 0..5 {
            let port = free_port();
            let conf = dir.join(format!("sentinel-{port}.conf"));
            let mut text = format!(
                "port {port}\nbind 127.0.0.1\ndir {}\n",
                dir.to_str().unwrap()
            );
            for l in lines {
                text.push_str(l);
                text.push('\n');
            }
            std::fs::write(&conf, text).unwrap();
            let mut cmd = Command::new("redis-sentinel");
            cmd.arg(&conf);
            let log = dir.join(format!("redis-sentinel-{port}.log"));
            if let Some(p) = Proc::launch(cmd, "redis-sentinel", port, log) {
                return p;
            }
        }
        panic!("redis-sentinel found no free port in 5 tries");
    }

    /// goblin-server's binary, which cargo names to goblin-server's own
    /// tests only (other packages share these helpers: goblin-module's
    /// tests start goblin-server in-process).
    pub fn goblin(dir: &Path, args: &[&str]) -> Proc {
        let Some(program) = option_env!("CARGO_BIN_EXE_goblin-server") else {
            panic!("the goblin-server binary is known to goblin-server's tests only");
        };
        Proc::spawn(program, dir, args)
    }

    pub fn redis(dir: &Path, args: &[&str]) -> Proc {
        Proc::spawn("redis-server", dir, args)
    }

    /// `goblin`, on the given port.
    pub fn goblin_on(dir: &Path, args: &[&str], port: u16) -> Proc {
        let Some(program) = option_env!("CARGO_BIN_EXE_goblin-server") else {
            panic!("the goblin-server binary is known to goblin-server's tests only");
        };
        Proc::spawn_on(program, dir, args, port)
    }

    /// `redis`, on the given port.
    pub fn redis_on(dir: &Path, args: &[&str], port: u16) -> Proc {
        Proc::spawn_on("redis-server", dir, args, port)
    }

    /// `program` started from the config file `conf` (its first
    /// argument, as redis-server wants it), then `--port`, `--dir` and
    /// `args`, on a free port.
    pub fn spawn_with_config(program: &str, dir: &Path, conf: &Path, args: &[&str]) -> Proc {
        for _ in 0..5 {
            let port = free_port();
            let mut cmd = Command::new(program);
            cmd.arg(conf)
                .args(["--port", &port.to_string(), "--dir", dir.to_str().unwrap()])
                .args(args);
            let log = dir.join(format!(
                "{}-{port}.log",
                Path::new(program).file_name().unwrap().to_string_lossy()
            ));
            if let Some(p) = Proc::launch(cmd, program, port, log) {
                return p;
            }
        }
        panic!("{program} found no free port in 5 tries");
    }

    /// Waits until the server answers PING (it loads its data first):
    /// true once it does, false when its port turned out to be taken.
    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                if log.contains("Address already in use") {
                    return false;
                }
                panic!("server exited ({status}) during startup:\n{log}");
            }
            if let Ok(mut c) = self.try_client() {
                if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                    // This server, not another one on a port it took.
                    let info: String = redis::cmd("INFO").arg("server").query(&mut c).unwrap();
                    return info.contains(&format!("\r\nprocess_id:{}\r\n", self.child.id()));
                }
            }
            assert!(Instant::now() < deadline, "server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn try_client(&self) -> redis::RedisResult<Connection> {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?
            .get_connection_with_timeout(Duration::from_secs(5))
    }

    pub fn client(&self) -> Connection {
        self.try_client().unwrap()
    }

    pub fn kill9(mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }

    /// SHUTDOWN SAVE (the server writes its RDB file, whatever its `save`
    /// setting), and waits (30 s at most) until the process exited with
    /// success.
    pub fn shutdown_save(mut self) {
        let mut c = self.client();
        let r: redis::RedisResult<()> = redis::cmd("SHUTDOWN").arg("SAVE").query(&mut c);
        // Success closes the connection; an error reply means no shutdown.
        if let Err(e) = &r {
            assert!(e.code().is_none(), "SHUTDOWN SAVE replied {e}");
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "SHUTDOWN SAVE: the server did not exit"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(
            status.success(),
            "SHUTDOWN SAVE: the server exited with {status}"
        );
    }

    pub fn shutdown(mut self) {
        let mut c = self.client();
        let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").arg("NOSAVE").query(&mut c);
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// DEBUG DIGEST: a hex signature of the whole dataset (the server must
/// allow DEBUG: `--enable-debug-command yes` for redis-server).
pub fn digest(c: &mut Connection) -> String {
    redis::cmd("DEBUG").arg("DIGEST").query(c).unwrap()
}
