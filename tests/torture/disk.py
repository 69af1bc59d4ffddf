"""disk: what acknowledged writes survive when the disk fills up or fails.

Every scenario runs on each server of --servers with the same seed: the
same keys, values, fault moments and load. Writes are `SET k:<n> <value>`
with a unique n and a 1 KB value that depends on the seed and n, so each
acknowledged write can be checked afterwards (MGET): `lost` counts the
acknowledged keys that are missing or hold another value after the server
restarted. Where a scenario also checks behaviour that Redis 7.0.15 shows
(refusing writes with MISCONF while it cannot persist, serving reads,
recovering when the disk has room again), each check Goblin fails is
counted in `lost` as well and named in the notes, so that the verdict
covers it; on Redis the same checks are only reported.

Full disks are small tmpfs mounts (a filler file takes all but a little
room, so the writes fill the rest quickly); failing disks and power loss
use faultfs.py, a FUSE layer over a directory. The configurations are
`appendonly yes`, `save ""` (only the AOF on the disk), under
`appendfsync always` and `everysec`, except where a scenario says otherwise.

Before the scenarios, faultfs checks its own model on a scratch mount
(faultfs.self_check). When that fails, or FUSE cannot run here, a
"faultfs self-check" row fails the run and the faultfs scenarios are left
out: an unverified layer must not produce verdicts.

Every scenario on every server has a deadline (60 s; --disk-long 240 s):
past it the server is killed and the scenario fails. Every mount is
unmounted and every work directory removed, also on errors and Ctrl-C;
--keep keeps those of failed scenarios, with the server's log.

--disk-long makes every scenario bigger (more room to fill, longer fault
windows); --disk-filter SUBSTRING runs the scenarios whose name contains
it; --disk-metadata chooses faultfs's model of directory entries for the
power-loss scenarios (strict by default).
"""

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import threading
import time

from common import BINARIES, Client, ReplyError, Server, remove_dir, rng, scratch_dir
from main import Result

import faultfs

MISCONF_AOF = "MISCONF Errors writing to the AOF file"
MISCONF_RDB = ("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to "
               "disk.")
# Per call: a stuck server turns into a connection error, not a hang.
CLIENT_TIMEOUT = 5.0
# Redis retries a failed AOF write every second (serverCron); a server that
# has not recovered this long after the disk is healthy again will not.
RECOVERY = 5.0


# ----------------------------------------------------------------------------
# Building blocks
# ----------------------------------------------------------------------------

class Mounts:
    """Every mount made by this module, unmounted in reverse order by
    close() whatever happened (exceptions, Ctrl-C)."""

    def __init__(self):
        self.items = []  # ("tmpfs", path) or ("faultfs", FaultFS)

    def tmpfs(self, path, size):
        os.makedirs(path, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path], check=True,
                       capture_output=True)
        self.items.append(("tmpfs", path))
        return path

    def faultfs(self, workdir, metadata="strict"):
        fs = faultfs.FaultFS(os.path.join(workdir, "backing"), os.path.join(workdir, "mnt"), metadata=metadata,
                             log_path=os.path.join(workdir, "faultfs.log"))
        self.items.append(("faultfs", fs))
        fs.start()
        return fs

    @staticmethod
    def resize(path, size):
        subprocess.run(["mount", "-o", f"remount,size={size}", path], check=True, capture_output=True)

    def close(self):
        while self.items:
            kind, item = self.items.pop()
            if kind == "faultfs":
                item.stop()
            else:
                r = subprocess.run(["umount", item], capture_output=True)
                if r.returncode != 0:
                    subprocess.run(["umount", "-l", item], capture_output=True)


def unmount_under(base):
    """Lazily unmounts whatever is still mounted below `base` (deepest
    first): the last line of defence before its removal."""
    try:
        with open("/proc/self/mounts") as f:
            points = [line.split()[1] for line in f]
    except OSError:
        return
    prefix = os.path.realpath(base).rstrip("/") + "/"
    for p in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", p], capture_output=True)


@contextlib.contextmanager
def interrupts_deferred():
    """Ctrl-C waits until the cleanup inside is done (unmounting, killing
    servers), then raises KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending = []
    old = signal.signal(signal.SIGINT, lambda *_: pending.append(True))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if pending:
        raise KeyboardInterrupt


class Values:
    """The value of key k:<n>: 1 KB, fixed by the seed and n."""

    def __init__(self, r):
        self.blob = "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(4096))

    def __call__(self, n):
        start = (n * 2654435761) % 3000
        return f"{n:010d}:" + self.blob[start:start + 1013]


class Run:
    """One scenario on one server: its work directory, the server, the
    writes acknowledged so far and the behaviour checks."""

    def __init__(self, name, kind, args, workdir, values):
        self.name = name
        self.kind = kind
        self.args = args
        self.workdir = workdir
        self.values = values
        self.keys = itertools.count()
        self.acked = {}  # n -> monotonic time of the reply
        self.violations = []
        self.notes = []
        self.server = None
        self.mounts = Mounts()
        self.cross = []
        self.allowed = 0
        self.expired = False

    def expire(self):
        """The scenario's deadline passed: kill the server, so that every
        wait in the scenario ends, and refuse to start it again."""
        self.expired = True
        if self.server is not None and self.server.alive():
            self.server.proc.kill()

    def check(self, ok, what):
        """A behaviour Redis 7.0.15 shows; Goblin failing it counts."""
        if not ok:
            self.violations.append(what)

    def note(self, text):
        self.notes.append(text)

    def start(self, directory, config, wait=True):
        if self.expired:
            raise RuntimeError("the scenario ran past its deadline")
        wait_for_binary(self.kind)
        if self.server is None:
            self.server = Server(self.kind, directory, config)
        else:
            self.server.dir = directory
            self.server.config = dict(config)
        self.server.start(wait=wait, timeout=30)
        return self.server

    def client(self):
        return self.server.client(timeout=CLIENT_TIMEOUT)

    def kill9(self):
        kill9(self.server)

    def write(self, count, conns=1, after=None):
        """`count` writes on a healthy disk, all to be acknowledged. A
        shortfall is a behaviour failure `after` something (recovery), or
        without it (setup, before any fault) an error of the scenario."""
        load = Load(self, conns=conns, max_writes=count).run_for(60.0)
        if load.acks < count:
            what = f"{count - load.acks} of {count} writes not acknowledged ({load.summary()})"
            if after is None:
                raise RuntimeError(f"writes on a healthy disk failed: {what}")
            self.check(False, f"after {after}, {what}")
        return load

    def result(self, lost_keys):
        r = Result(scenario=self.name, server=self.kind, rounds=1, acked=len(self.acked))
        r.lost = len(lost_keys)
        if lost_keys:
            sample = ", ".join(f"k:{n}" for n in sorted(lost_keys)[:5])
            r.notes.append(f"{plural(len(lost_keys), 'acknowledged write')} lost, e.g. {sample}")
        if self.kind == "goblin":
            r.lost += len(self.violations)
            r.notes += [f"violation: {v}" for v in self.violations]
        else:
            r.notes += [f"reference: {v}" for v in self.violations]
        r.notes += self.notes
        return r


def wait_for_binary(kind, timeout=60.0):
    """The server binary may be replaced while a build runs: wait for it
    rather than report a missing file as a lost scenario."""
    deadline = time.monotonic() + timeout
    while not os.access(BINARIES[kind], os.X_OK) and time.monotonic() < deadline:
        time.sleep(0.5)


def kill9(server, timeout=15.0):
    if server is None or server.proc is None:
        return
    if server.alive():
        server.proc.send_signal(signal.SIGKILL)
    try:
        server.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{server.kind} did not die within {timeout} s of SIGKILL")


class Load:
    """Several connections writing SET k:<n> <value> until stopped, the
    server dies, or max_writes writes were tried. Records every
    acknowledged write (with its time), every refusal and every broken
    connection."""

    def __init__(self, run, conns=4, max_writes=None, rate=None):
        self.run = run
        self.conns = conns
        self.max_writes = max_writes
        # Writes per second per connection (None: as fast as it answers).
        self.rate = rate
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.tried = 0
        self.acks = 0
        self.refusals = 0
        self.refusal_texts = {}
        self.conn_errors = 0
        self.first_refusal = None
        self.first_error = None
        self.full_since = None
        self.threads = []

    def _take(self):
        with self.lock:
            if self.max_writes is not None and self.tried >= self.max_writes:
                return None
            self.tried += 1
        return next(self.run.keys)

    def _writer(self):
        server = self.run.server
        c = None
        t0 = time.monotonic()
        sent = 0
        while not self.stop_event.is_set():
            if self.rate:
                wait = t0 + sent / self.rate - time.monotonic()
                if wait > 0:
                    self.stop_event.wait(wait)
                    continue
                sent += 1
            if c is None:
                try:
                    c = server.client(timeout=CLIENT_TIMEOUT)
                except OSError:
                    if not server.alive():
                        return
                    time.sleep(0.05)
                    continue
            n = self._take()
            if n is None:
                break
            try:
                reply = c.call("SET", f"k:{n}", self.run.values(n))
                if reply == "OK":
                    now = time.monotonic()
                    with self.lock:
                        self.run.acked[n] = now
                        self.acks += 1
            except ReplyError as e:
                with self.lock:
                    self.refusals += 1
                    if self.first_refusal is None:
                        self.first_refusal = time.monotonic()
                    text = str(e)
                    self.refusal_texts[text] = self.refusal_texts.get(text, 0) + 1
                time.sleep(0.002)
            except OSError:
                with self.lock:
                    self.conn_errors += 1
                    if self.first_error is None:
                        self.first_error = time.monotonic()
                c.close()
                c = None
                if not server.alive():
                    return
                time.sleep(0.05)
        if c is not None:
            c.close()

    def start(self):
        for _ in range(self.conns):
            t = threading.Thread(target=self._writer, daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def stop(self):
        self.stop_event.set()
        deadline = time.monotonic() + CLIENT_TIMEOUT + 5
        for t in self.threads:
            t.join(timeout=max(0.1, deadline - time.monotonic()))
        if any(t.is_alive() for t in self.threads):
            raise RuntimeError("a writer did not stop (server stuck past the socket timeout)")

    def done(self):
        return not any(t.is_alive() for t in self.threads)

    def trouble_since(self):
        """When the first refusal or broken connection came, or None."""
        times = [t for t in (self.first_refusal, self.first_error) if t is not None]
        return min(times) if times else None

    def run_for(self, seconds):
        self.start()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.done():
            time.sleep(0.01)
        self.stop()
        return self

    def run_until_trouble(self, beyond, limit, full=None):
        """Writes until the first refusal or broken connection, or until
        full() says the disk is full, then `beyond` seconds more; at most
        `limit` seconds in all."""
        self.start()
        deadline = time.monotonic() + limit
        self.full_since = None
        while time.monotonic() < deadline and not self.done():
            if self.full_since is None and full is not None and full():
                self.full_since = time.monotonic()
            t = min((x for x in (self.trouble_since(), self.full_since) if x is not None), default=None)
            if t is not None and time.monotonic() > t + beyond:
                break
            time.sleep(0.01)
        self.stop()
        return self

    def summary(self):
        parts = [f"{self.tried} tried"]
        if self.refusals:
            texts = "; ".join(f"{n}x {t[:90]}" for t, n in sorted(self.refusal_texts.items(), key=lambda x: -x[1]))
            parts.append(f"{self.refusals} refused ({texts})")
        if self.conn_errors:
            parts.append(f"{self.conn_errors} connection errors")
        return ", ".join(parts)


def verify(run, directory, config, keep_running=False):
    """Restarts the server (killed before) on `directory` and returns the
    acknowledged keys that are missing or wrong. A server that does not
    come back loses everything. The server is killed again unless
    keep_running."""
    try:
        run.start(directory, config)
    except RuntimeError as e:
        run.check(False, f"does not restart once the disk is healthy: {str(e).splitlines()[0]}")
        run.note("log: " + " | ".join(run.server.log_tail(3).strip().splitlines()))
        return sorted(run.acked)
    try:
        c = run.client()
        try:
            lost = missing_keys(c, run.acked, run.values)
        finally:
            c.close()
    except BaseException:
        kill9(run.server)
        raise
    if not keep_running:
        kill9(run.server)
    return lost


def missing_keys(c, keys, values):
    lost = []
    ordered = sorted(keys)
    for i in range(0, len(ordered), 200):
        batch = ordered[i:i + 200]
        got = c.call("MGET", *[f"k:{n}" for n in batch])
        for n, v in zip(batch, got):
            if v is None or v.decode(errors="replace") != values(n):
                lost.append(n)
    return lost


def info(c, section="persistence"):
    out = {}
    raw = c.call("INFO", section)
    for line in (raw.decode() if isinstance(raw, bytes) else raw).splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = v
    return out


def poll(cond, timeout, step=0.05):
    """Until cond() is true (returns the seconds it took) or the time runs
    out (returns None)."""
    t0 = time.monotonic()
    while True:
        try:
            if cond():
                return time.monotonic() - t0
        except (OSError, ReplyError):
            pass
        if time.monotonic() - t0 > timeout:
            return None
        time.sleep(step)


def try_set(run, n=None):
    """One write on a fresh connection; True when acknowledged."""
    n = next(run.keys) if n is None else n
    c = run.client()
    try:
        try:
            if c.call("SET", f"k:{n}", run.values(n)) == "OK":
                run.acked[n] = time.monotonic()
                return True
        except ReplyError:
            pass
        return False
    finally:
        c.close()


def reads_work(run):
    """A read of an acknowledged key answers with its value."""
    if not run.acked:
        return True
    n = min(run.acked)
    try:
        c = run.client()
        try:
            v = c.call("GET", f"k:{n}")
        finally:
            c.close()
    except (OSError, ReplyError):
        return False
    return v is not None and v.decode(errors="replace") == run.values(n)


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(path, leave):
    """A filler file that leaves `leave` bytes free on the file system."""
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize
    size = max(0, free - leave)
    with open(os.path.join(path, "filler"), "ab") as f:
        chunk = b"\0" * (1 << 20)
        while size > 0:
            try:
                f.write(chunk[:min(size, len(chunk))])
                f.flush()
            except OSError:
                break
            size -= min(size, len(chunk))


def fill_completely(path):
    fill(path, 0)
    with open(os.path.join(path, "filler-tail"), "ab", buffering=0) as f:
        while True:
            try:
                f.write(b"\0" * 4096)
            except OSError:
                break


def exit_reason(server):
    """The server's last warning line, for a server that exited."""
    lines = [l for l in server.log_tail(40).splitlines() if " # " in l]
    return lines[-1].split(" # ", 1)[1].strip() if lines else "(no warning in the log)"


def plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def aof_config(policy):
    return {"appendonly": "yes", "appendfsync": policy, "save": ""}


# ----------------------------------------------------------------------------
# Scenarios
# ----------------------------------------------------------------------------

def disk_full(run, policy, room_live):
    """The disk fills while several connections write. Redis under
    `always` exits ("Can't recover from AOF write error when the AOF fsync
    policy is 'always'"); under `everysec` it refuses writes with
    -MISCONF from the first failed write on, and still serves reads. Then
    either the server is killed while the disk is full and restarted once
    there is room (room_live False), or room is given while it runs and it
    must accept writes again by itself, without a restart (room_live
    True), before a later kill -9 and restart. Checked: every write
    acknowledged is there after the restart; Goblin refuses (or exits)
    while the disk is full, keeps serving reads, and recovers by itself."""
    sz = run.args.disk_sizes
    disk = run.mounts.tmpfs(os.path.join(run.workdir, "disk"), sz["tmpfs"])
    config = aof_config(policy)
    run.start(disk, config)
    run.write(50)
    fill(disk, sz["room"])
    load = Load(run, conns=4, max_writes=sz["max_writes"]).run_until_trouble(
        beyond=sz["beyond"], limit=20, full=lambda: free_bytes(disk) < 2048)
    run.note(f"disk full: {len(run.acked)} acknowledged, {load.summary()}")
    if load.first_refusal is not None and load.full_since is not None:
        run.note(f"first refusal {load.first_refusal - load.full_since:+.2f} s from the disk filling up")
    alive = run.server.alive()
    if not alive:
        run.note(f"{run.kind} exited: {exit_reason(run.server)}")
    else:
        run.check(load.refusals > 0, "kept acknowledging writes on a full disk (no MISCONF)")
        run.check(reads_work(run), "reads fail while the disk is full")
        if load.refusals:
            run.check(any(t.startswith("MISCONF") for t in load.refusal_texts),
                      f"refused with {next(iter(load.refusal_texts))!r}, not MISCONF")
    if room_live:
        Mounts.resize(disk, sz["room_given"])
        if alive and run.server.alive():
            took = poll(lambda: try_set(run), timeout=RECOVERY)
            run.check(took is not None, f"did not accept writes within {RECOVERY:.0f} s of the disk having room")
            if took is not None:
                run.note(f"writes accepted again {took:.2f} s after room was given")
                run.write(100, after="room was given")
        run.kill9()
    else:
        run.kill9()
        Mounts.resize(disk, sz["room_given"])
    return verify(run, disk, config)


def disk_full_at_startup(run, policy):
    """The disk is already full when the server starts on an empty
    directory. Whatever it does (refuse to start, or start and refuse
    writes), no write it acknowledges may be lost: after kill -9 and room
    given, it restarts and every acknowledged write is there; and it must
    start once the disk has room."""
    disk = run.mounts.tmpfs(os.path.join(run.workdir, "disk"), "1m")
    fill_completely(disk)
    config = aof_config(policy)
    run.start(disk, config, wait=False)
    up = poll(lambda: ping(run.server) or not run.server.alive(), timeout=15.0)
    if up is None or not run.server.alive():
        run.note(f"refused to start on a full disk: {exit_reason(run.server)}")
    else:
        load = Load(run, conns=2, max_writes=200).run_until_trouble(beyond=0.5, limit=10, full=lambda: True)
        run.note(f"started on a full disk; {len(run.acked)} acknowledged, {load.summary()}")
        if run.server.alive():
            run.check(load.refusals > 0, "acknowledged writes on a full disk (no MISCONF)")
            run.check(reads_work(run), "reads fail on a full disk")
    run.kill9()
    Mounts.resize(disk, "64m")
    return verify(run, disk, config)


def ping(server):
    try:
        c = Client(server.port, timeout=1.0)
        try:
            return c.call("PING") == "PONG"
        finally:
            c.close()
    except (OSError, ReplyError):
        return False


def bgsave_full(run):
    """appendonly no, `save 3600 1`, stop-writes-on-bgsave-error yes: a
    BGSAVE fails for lack of space. Redis then reports
    rdb_last_bgsave_status:err in INFO persistence, refuses writes with
    "-MISCONF Redis is configured to save RDB snapshots, but it's currently
    unable to persist to disk...", serves reads, and accepts writes again
    once a BGSAVE succeeds. Each of these is checked; then, after kill -9,
    every write acknowledged before the successful BGSAVE must load from
    its dump.rdb."""
    disk = run.mounts.tmpfs(os.path.join(run.workdir, "disk"), "4m")
    config = {"appendonly": "no", "save": "3600 1", "stop-writes-on-bgsave-error": "yes"}
    run.start(disk, config)
    run.write(300, conns=2)
    fill_completely(disk)
    c = run.client()
    try:
        try:
            run.note(f"BGSAVE on a full disk: {c.call('BGSAVE')}")
        except ReplyError as e:
            run.note(f"BGSAVE on a full disk: -{e}")
        done = poll(lambda: info(c).get("rdb_bgsave_in_progress") == "0"
                    and info(c).get("rdb_last_bgsave_status") == "err", timeout=10.0)
        run.check(done is not None, "INFO persistence never showed rdb_last_bgsave_status:err")
        n = next(run.keys)
        try:
            c.call("SET", f"k:{n}", run.values(n))
            run.acked[n] = time.monotonic()
            run.check(False, "accepted a write after the failed BGSAVE")
        except ReplyError as e:
            run.check(str(e).startswith(MISCONF_RDB), f"write refused with {str(e)[:100]!r}, not Redis's MISCONF")
        run.check(reads_work(run), "reads fail after the failed BGSAVE")
        os.unlink(os.path.join(disk, "filler"))
        os.unlink(os.path.join(disk, "filler-tail"))
        try:
            c.call("BGSAVE")
        except ReplyError as e:
            run.note(f"BGSAVE with room: -{e}")
        ok = poll(lambda: info(c).get("rdb_bgsave_in_progress") == "0"
                  and info(c).get("rdb_last_bgsave_status") == "ok", timeout=10.0)
        run.check(ok is not None, "a BGSAVE with room did not succeed within 10 s")
        # Only what the successful BGSAVE wrote is promised (appendonly no).
        snapshot = dict(run.acked)
        took = poll(lambda: try_set(run), timeout=3.0)
        run.check(took is not None, "writes still refused after a successful BGSAVE")
    finally:
        c.close()
    run.kill9()
    run.note(f"{plural(len(run.acked) - len(snapshot), 'write')} after the last BGSAVE not checked (no AOF)")
    run.acked = snapshot
    return verify(run, disk, config)


def eio(run, policy, op):
    """faultfs fails `op` with EIO while a paced load writes: every write
    to the AOF ("write", `*.aof`) or every fsync ("fsync", files and
    directories). While it lasts, Redis 7.0.15 under `always` exits on the
    first failure ("Can't recover from AOF write error..." / "Can't persist
    AOF for fsync error...") and under `everysec` refuses writes with
    "-MISCONF Errors writing to the AOF file: ..." and serves reads.
    Checked: the fault was hit; a server that stays up refuses writes with
    that MISCONF and serves reads; once the fault is lifted it accepts
    writes again within a few seconds; after kill -9 and a restart every
    acknowledged write is there."""
    sz = run.args.disk_sizes
    fs = run.mounts.faultfs(os.path.join(run.workdir, "fs"))
    config = aof_config(policy)
    run.start(fs.mountpoint, config)
    run.write(100, conns=2)
    fs.fault(op, glob={"write": "*.aof", "fsync": "*"}[op])
    fault_on = time.monotonic()
    load = Load(run, conns=4, max_writes=sz["max_writes"] * 4, rate=sz["rate"]).start()
    deadline = time.monotonic() + sz["fault_window"]
    while time.monotonic() < deadline and not load.done():
        time.sleep(0.01)
    load.stop()
    injected = fs.counters()["faults"][op]
    run.note(f"fault on: {injected} {op} calls failed; {len(run.acked)} acknowledged, {load.summary()}")
    run.check(injected > 0, f"no {op} reached the file system while the fault was on")
    if load.first_refusal is not None:
        run.note(f"first refusal {load.first_refusal - fault_on:.2f} s after the fault was set")
    alive = run.server.alive()
    if not alive:
        run.note(f"{run.kind} exited: {exit_reason(run.server)}")
    else:
        run.check(load.refusals > 0, f"kept acknowledging writes while every AOF {op} failed")
        if load.refusals:
            run.check(any(t.startswith(MISCONF_AOF) for t in load.refusal_texts),
                      f"refused with {next(iter(load.refusal_texts))!r}, not {MISCONF_AOF!r}")
        run.check(reads_work(run), f"reads fail while AOF {op} fails")
    fs.clear()
    if alive and run.server.alive():
        took = poll(lambda: try_set(run), timeout=RECOVERY)
        run.check(took is not None, f"did not accept writes within {RECOVERY:.0f} s of the fault being lifted")
        if took is not None:
            run.note(f"writes accepted {took:.2f} s after the fault was lifted")
            run.write(100, conns=2, after="the fault was lifted")
    run.kill9()
    return verify(run, fs.mountpoint, config)


def bgrewrite(run, timeout=5.0, started=None):
    """Runs a BGREWRITEAOF to its end: "ok", "err", "err (refused: ...)"
    when it does not start, None when it does not end in time.
    `started` runs as soon as the server has answered that it started."""
    try:
        c = run.client()
    except OSError as e:
        return f"no connection: {e}"
    try:
        i = info(c)
        before = (int(i.get("aof_rewrites", "0") or 0), int(i.get("aof_rewrites_consecutive_failures", "0") or 0))
        try:
            c.call("BGREWRITEAOF")
        except ReplyError as e:
            return f"err (refused: {str(e)[:120]})"
        if started is not None:
            started()

        def finished():
            # Ended, and counted as a rewrite or as one more failure.
            i = info(c)
            now = (int(i.get("aof_rewrites", "0") or 0), int(i.get("aof_rewrites_consecutive_failures", "0") or 0))
            return (i.get("aof_rewrite_in_progress") == "0" and i.get("aof_rewrite_scheduled") == "0"
                    and (now[0] > before[0] or now[1] > before[1]))

        if poll(finished, timeout, step=0.02) is None:
            return None
        return info(c).get("aof_last_bgrewrite_status")
    except (OSError, ReplyError) as e:
        return f"no answer: {e}"
    finally:
        c.close()


def manifest_rename(run, policy):
    """faultfs fails the rename of the AOF manifest (`*.manifest`: both
    servers write it to a temporary file, fsync it and rename it over the
    old one), while a paced load writes on. Redis 7.0.15 switches the
    manifest when a BGREWRITEAOF starts (a new incr file) and when it ends
    (the new base): a failed rename at the start refuses the BGREWRITEAOF,
    one at the end fails the rewrite (aof_last_bgrewrite_status:err), and
    in both cases the old manifest stays valid and writes go on. Checked:
    each rewrite whose manifest rename failed reports the failure; after
    kill -9 right after the failed switch and a restart with the fault
    lifted, every acknowledged write is there (the manifest left names
    files that hold them all); then a BGREWRITEAOF succeeds, and after
    another kill -9 and restart nothing acknowledged is missing."""
    sz = run.args.disk_sizes
    fs = run.mounts.faultfs(os.path.join(run.workdir, "fs"))
    config = aof_config(policy)
    run.start(fs.mountpoint, config)
    run.write(100, conns=2)
    load = Load(run, conns=4, max_writes=sz["max_writes"] * 4, rate=sz["rate"]).start()
    try:
        # Every manifest rename fails: the rewrite's first switch does.
        fs.fault("rename", glob="*.manifest")
        hits = fs.counters()["faults"]["rename"]
        first = bgrewrite(run)
        fs.clear()
        hits_first = fs.counters()["faults"]["rename"] - hits
        run.note(f"BGREWRITEAOF with every manifest rename failing: {first} "
                 f"({plural(hits_first, 'rename')} failed)")
        run.check(hits_first > 0, "no manifest rename reached the file system during BGREWRITEAOF")
        if hits_first:
            run.check(first is not None and first.startswith("err"),
                      f"a rewrite whose manifest rename failed reported {first}")
        # Only the renames after the rewrite started fail: its last switch.
        hits = fs.counters()["faults"]["rename"]
        second = bgrewrite(run, started=lambda: fs.fault("rename", glob="*.manifest"))
        fs.clear()
        hits_second = fs.counters()["faults"]["rename"] - hits
        run.note(f"BGREWRITEAOF whose final manifest rename fails: {second} "
                 f"({plural(hits_second, 'rename')} failed)")
        if hits_second:
            run.check(second is not None and second.startswith("err"),
                      f"a rewrite whose final manifest rename failed reported {second}")
        else:
            run.note("the rewrite ended before the fault was set: its final switch was not tested")
        time.sleep(0.2)
    finally:
        load.stop()
    run.note(f"{len(run.acked)} acknowledged, {load.summary()}")
    run.check(run.server.alive(), f"exited: {exit_reason(run.server)}")
    # Killed right after the failed switch: the manifest left must name
    # files that hold every acknowledged write.
    run.kill9()
    lost = set(verify(run, fs.mountpoint, config, keep_running=True))
    if run.server.alive():
        after = bgrewrite(run)
        run.check(after == "ok", f"BGREWRITEAOF after the fault was lifted and a restart: {after}")
        run.write(50, after="the fault was lifted and a restart")
        run.kill9()
        lost |= set(verify(run, fs.mountpoint, config))
    return sorted(lost)


def power_loss(run, policy):
    """Power loss: the server is killed in the middle of a load (a
    BGREWRITEAOF started during it), then faultfs drops everything that
    was not fsynced (file data at its last fsync, directory entries at
    their directory's last fsync) and the server restarts on what is left.
    Under `always` no acknowledged write may be lost; under `everysec` at
    most about one second: `allowed` is the number of writes acknowledged
    in the last 1.5 s before the crash. The files left must also load in
    the other server (goblin-server reads Redis's, redis-server 7.0.15
    reads Goblin's), started on a copy of them, and it must find every
    acknowledged key that the server which wrote them finds."""
    sz = run.args.disk_sizes
    fs = run.mounts.faultfs(os.path.join(run.workdir, "fs"), metadata=run.args.disk_metadata)
    # A directory made durable before the server starts: creating it is
    # not what is tested here (neither server fsyncs the parent after mkdir).
    os.mkdir(os.path.join(fs.mountpoint, "appendonlydir"))
    fs.sync()
    config = aof_config(policy)
    run.start(fs.mountpoint, config)
    r = rng(run.args.seed, "disk", run.name)
    # Long enough under everysec that the last 1.5 s are not all of it.
    duration = r.uniform(1.0, 1.5) if policy == "always" else r.uniform(2.5, 3.0) * sz["scale"]
    load = Load(run, conns=4, max_writes=sz["max_writes"] * 4, rate=sz["rate"]).start()
    started = time.monotonic()
    time.sleep(r.uniform(0.3, 0.6))
    rewrite = bgrewrite(run, timeout=5.0)
    time.sleep(max(0.0, started + duration - time.monotonic()))
    kill9(run.server)
    crash_at = time.monotonic()
    load.stop()
    rep = fs.crash()
    run.note(f"{len(run.acked)} acknowledged, {load.summary()}; BGREWRITEAOF: {rewrite}; "
             f"the crash dropped {rep['dropped_bytes']} bytes; left: "
             + ", ".join(f"{p} ({s} B)" for p, s in sorted(rep["files"].items())))
    if policy == "everysec":
        run.allowed = sum(1 for t in run.acked.values() if t >= crash_at - 1.5)
        run.note(f"allowed: {run.allowed} writes acknowledged in the last 1.5 s before the crash")
    copy = os.path.join(run.workdir, "after-crash")
    shutil.copytree(fs.backing, copy)
    lost = verify(run, fs.mountpoint, config)
    # The other server on a copy (this one restarted on them above).
    for loader in [k for k in ("goblin", "redis") if k != run.kind]:
        d = os.path.join(run.workdir, f"loaded-by-{loader}")
        shutil.copytree(copy, d)
        other = Server(loader, d, aof_config("everysec"))
        try:
            wait_for_binary(loader)
            other.start(timeout=30)
            c = other.client(timeout=CLIENT_TIMEOUT)
            try:
                miss = missing_keys(c, run.acked, run.values)
                size = c.call("DBSIZE")
            finally:
                c.close()
            run.note(f"{loader}-server loads them: {size} keys, {len(miss)} acknowledged missing")
            problem = None
            if len(miss) > len(lost):
                problem = (f"{loader}-server finds {len(miss)} acknowledged keys missing in the files "
                           f"{run.kind}-server left, {run.kind}-server {len(lost)}")
        except (RuntimeError, OSError, ReplyError) as e:
            problem = f"{loader}-server cannot load the files {run.kind}-server left: {str(e).splitlines()[0]}"
        finally:
            kill9(other)
            try:
                os.unlink(other.log_path)
            except OSError:
                pass
        if problem and loader == "goblin":
            run.cross.append(problem)  # Goblin must read Redis's files: counts on Goblin's row
        elif problem:
            run.check(False, problem)
    return lost


def scenarios(args):
    """(name, function of a Run) for every disk scenario, in running order."""
    out = []
    for policy in ("always", "everysec"):
        out.append((f"disk full, kill -9, room ({policy})", lambda run, p=policy: disk_full(run, p, False)))
        out.append((f"disk full, room given live ({policy})", lambda run, p=policy: disk_full(run, p, True)))
    for policy in ("always", "everysec"):
        out.append((f"disk full at startup ({policy})", lambda run, p=policy: disk_full_at_startup(run, p)))
    out.append(("bgsave fails on full disk (stop-writes)", bgsave_full))
    for op, label in (("write", "EIO on AOF write"), ("fsync", "EIO on fsync")):
        for policy in ("always", "everysec"):
            out.append((f"{label} ({policy})", lambda run, p=policy, o=op: eio(run, p, o)))
    for policy in ("always", "everysec"):
        out.append((f"EIO on manifest rename ({policy})", lambda run, p=policy: manifest_rename(run, p)))
    for policy in ("always", "everysec"):
        out.append((f"power loss ({policy})", lambda run, p=policy: power_loss(run, p)))
    if args.disk_filter:
        out = [(n, f) for n, f in out if args.disk_filter in n]
    return out


def run_one(args, name, fn, kind, workdir, cross):
    """One scenario on one server, cleaned up whatever happens; its work
    directory (and the server's log) stay only when it failed and --keep."""
    os.makedirs(workdir)
    run = Run(name, kind, args, workdir, Values(rng(args.seed, "disk", name, "values")))
    run.cross = cross
    t0 = time.monotonic()
    res = None
    deadline = threading.Timer(args.disk_sizes["deadline"], run.expire)
    deadline.daemon = True
    deadline.start()
    try:
        res = run.result(fn(run))
    except Exception as e:
        res = run.result([])
        res.lost += 1 if kind == "goblin" else 0
        lines = str(e).strip().splitlines() or [""]
        res.notes.append(f"scenario error: {type(e).__name__}: {lines[0]}"
                         + (f" ... {lines[-1].strip()}" if len(lines) > 1 else ""))
    finally:
        deadline.cancel()
        if run.expired and res is not None:
            res.lost += 1 if kind == "goblin" else 0
            res.notes.append(f"ran past its deadline of {args.disk_sizes['deadline']:.0f} s: server killed")
        with interrupts_deferred():
            kill9(run.server)
            run.mounts.close()
            keep = res is not None and res.failed() and args.keep
            if run.server is not None:
                if keep:
                    shutil.copy(run.server.log_path, workdir)
                try:
                    os.unlink(run.server.log_path)
                except OSError:
                    pass
            if not keep:
                remove_dir(workdir)
    res.allowed = run.allowed
    if args.verbose:
        res.notes.append(f"took {time.monotonic() - t0:.1f} s")
    if keep:
        res.notes.append(f"kept in {workdir}")
    return res


def run(args):
    args.disk_sizes = ({"tmpfs": "16m", "room": 4 << 20, "max_writes": 20000, "beyond": 3.0,
                        "room_given": "64m", "fault_window": 4.0, "rate": 400, "scale": 3, "deadline": 240.0}
                       if args.disk_long else
                       {"tmpfs": "8m", "room": 384 << 10, "max_writes": 3000, "beyond": 1.2,
                        "room_given": "64m", "fault_window": 1.6, "rate": 200, "scale": 1, "deadline": 60.0})
    results = []
    base = scratch_dir("disk")
    try:
        try:
            problems = faultfs.self_check(os.path.join(base, "self-check"))
        except Exception as e:  # no FUSE here: every faultfs scenario is unverifiable
            lines = str(e).strip().splitlines() or [type(e).__name__]
            problems = [f"faultfs cannot run ({lines[0].rstrip(':')}"
                        f"{': ' + lines[-1] if len(lines) > 1 else ''}); it needs /dev/fuse, Debian's "
                        "libfuse3-3 and mfusepy from PyPI (scripts/torture installs it)"]
        remove_dir(os.path.join(base, "self-check"))
        if problems:
            r = Result(scenario="faultfs self-check", server="goblin", rounds=1, lost=len(problems))
            r.notes = [f"harness problem: {p}" for p in problems]
            results.append(r)
        for name, fn in scenarios(args):
            if problems and ("EIO" in name or "power" in name):
                continue
            cross = []  # Goblin's failures found on Redis's row (reading Redis's files)
            for kind in args.servers:
                workdir = os.path.join(base, f"{len(results):02d}-{kind}")
                res = run_one(args, name, fn, kind, workdir, cross)
                results.append(res)
                print(f"torture: disk: {name} on {kind}: {res.acked} acked, {res.lost} lost", flush=True)
            goblin = [r for r in results if r.scenario == name and r.server == "goblin"]
            if cross and goblin:
                goblin[0].lost += len(cross)
                goblin[0].notes += [f"violation: {c}" for c in cross]
    finally:
        with interrupts_deferred():
            unmount_under(base)
            if not any(n.startswith("kept in ") for r in results for n in r.notes):
                remove_dir(base)
    return results
