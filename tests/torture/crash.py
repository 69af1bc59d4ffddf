"""crash: kill -9 at seeded random moments while a load runs and
BGREWRITEAOF, BGSAVE and manifest switches (CONFIG SET appendonly no, then
yes) happen, under `appendfsync always`.

What is promised: with `appendfsync always` a write is on disk before its
reply leaves, so after a kill -9 and a restart on the same directory every
write whose success reply was read is there, and a MULTI/EXEC block or a
script is there entirely or not at all. The one exception is Redis's own:
while the append-only file is switched off and back on, nothing is logged
until the rewrite that the switch starts has finished, so a write
acknowledged in that window is promised only once the rewrite is seen to
be done (INFO persistence: aof_enabled:1, no rewrite in progress or
scheduled, last rewrite ok). Writes acknowledged in a window that the kill
interrupted are counted apart and may be missing.

Each server runs `rounds` rounds on one data directory, so that a round
loads whatever the previous kill left (a manifest mid-switch, a base
mid-rewrite, temp files). A round:
  1. starts the server with `appendonly yes`, `appendfsync always`, and a
     seeded `aof-use-rdb-preamble`, save rule and (sometimes small)
     `auto-aof-rewrite-min-size`, so that rewrites also start by
     themselves; a server that exits or does not answer PING (LOADING
     counts as not yet) within the time limit refused to start, which
     fails the round with its log tail, the append-only directory's
     listing and its manifest;
  2. verifies the dataset against everything acknowledged in all earlier
     rounds (see `verify`);
  3. runs the load (WRITERS connections, each a thread) and the chaos
     thread, which issues BGREWRITEAOF, BGSAVE and manifest switches at
     seeded times and then kills the server's process group with SIGKILL
     at a seeded time, sometimes right after a BGREWRITEAOF or a switch
     so that the kill lands in the middle of it. The whole group is
     killed, as a machine crash or a container stop would: Redis's fork
     children would otherwise live on and rename their files into the
     directory while the next round runs;
  4. looks for temp files (temp-*.rdb, temp-rewriteaof-*, temp-*.manifest,
     temp-*.incr) older than the round: the kill explains those the round
     wrote, not those left by earlier rounds; leftovers are reported in the
     notes, as are files in the append-only directory that the manifest
     does not name.
After the last round the server is started once more and verified.

Every random choice comes from the seed (rng(seed, "crash", ...)), the
same for both servers; thread timing decides how far each round gets.
Every failure note names the round and the seed.
"""

import os
import signal
import subprocess
import threading
import time

from common import ReplyError, Server, Client, rng, scratch_dir, remove_dir
from main import Result

SCENARIO = "crash: kill -9 under appendfsync always"
DEFAULT_ROUNDS = 8
WRITERS = 3
COUNTERS = ["ctr:0", "ctr:1", "ctr:2"]
LISTS = ["list:0", "list:1", "list:2"]
HASHES = ["hash:0", "hash:1"]
# Counters that only transactions (tx) and scripts (ev) increment: their
# value must equal the number of those blocks present.
TX_COUNTER = "ctr:tx"
EV_COUNTER = "ctr:ev"
START_TIMEOUT = 30
CLIENT_TIMEOUT = 5.0
# The script a writer runs: two keys and a counter in one atomic step.
SCRIPT = ("redis.call('SET', KEYS[1], ARGV[1]) "
          "redis.call('SET', KEYS[2], ARGV[2]) "
          "return redis.call('INCR', KEYS[3])")
# How many missing writes a round's note lists by name.
NOTE_EXAMPLES = 5


class CrashServer(Server):
    """A Server in a process group of its own, so that kill9 takes its
    fork children (Redis's BGSAVE and rewrite children) with it."""

    def __init__(self, kind, directory, config, log_path):
        super().__init__(kind, directory, config)
        self.log_path = log_path

    def start(self, wait=True, timeout=START_TIMEOUT):
        os.makedirs(self.dir, exist_ok=True)
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT, cwd=self.dir, start_new_session=True)
        if wait:
            self.wait_ready(timeout)
        return self

    def kill9(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


class Op:
    """One write as the harness sent it. `kind` is set, incr, rpush,
    hset, multi or eval; `target` is the counter, list or hash written
    (None for set, multi and eval); `items` are (key or field, value)
    pairs, or the one element pushed. A write counts as acknowledged only
    once its success reply was read; `ack_gen` is the ledger's generation
    at that moment (see Ledger)."""

    __slots__ = ("kind", "round", "conn", "seq", "target", "items", "acked", "ack_gen", "promised")

    def __init__(self, kind, rnd, conn, seq, target, items):
        self.kind = kind
        self.round = rnd
        self.conn = conn
        self.seq = seq
        self.target = target
        self.items = items
        self.acked = False
        self.ack_gen = -1
        self.promised = False

    def name(self):
        return f"{self.kind} r{self.round} c{self.conn} #{self.seq}"


class Ledger:
    """Every write sent to one server over all rounds, and the switch
    windows. `gen` is odd while a manifest switch is open (from just before
    CONFIG SET appendonly no until its rewrite is seen done) and even
    otherwise. At a kill with an odd `gen`, the writes acknowledged at that
    generation are not promised; every other acknowledged write is."""

    def __init__(self):
        self.lock = threading.Lock()
        self.gen = 0
        self.ops = []
        self.reported = set()       # ids of ops whose loss was already counted
        self.counter_deficit = {}   # counter -> deficit already counted
        self.unpromised = 0

    def open_window(self):
        with self.lock:
            assert self.gen % 2 == 0
            self.gen += 1

    def close_window(self):
        with self.lock:
            assert self.gen % 2 == 1
            self.gen += 1

    def close_round(self, ops):
        """After the kill: `ops` (the round's writes) join the ledger with
        their promise decided."""
        open_gen = self.gen if self.gen % 2 == 1 else None
        for op in ops:
            op.promised = op.acked and op.ack_gen != open_gen
            if op.acked and not op.promised:
                self.unpromised += 1
        self.ops.extend(ops)
        if open_gen is not None:
            self.gen += 1  # the restart ends the window either way


def round_config(seed, rnd):
    """The round's directives: the same for both servers."""
    r = rng(seed, "crash", "config", rnd)
    cfg = {
        "appendonly": "yes",
        "appendfsync": "always",
        "aof-use-rdb-preamble": r.choice(["yes", "no"]),
        "save": r.choice(["1 1", "1 1", "", "2 50 60 10000"]),
        "auto-aof-rewrite-min-size": r.choice(["64mb", "64kb", "16kb"]),
        "auto-aof-rewrite-percentage": r.choice(["100", "50"]),
    }
    return cfg


# ---------------------------------------------------------------- load


class Writer(threading.Thread):
    """One connection writing a seeded mix until the connection fails
    (the kill) or `stop` is set. Every op is recorded before it is sent;
    it is marked acknowledged only when its success reply was read."""

    def __init__(self, port, seed, rnd, conn, ledger, stop):
        super().__init__(daemon=True, name=f"writer-{conn}")
        self.port = port
        self.rnd = rnd
        self.conn = conn
        self.r = rng(seed, "crash", "writer", rnd, conn)
        self.ledger = ledger
        self.stop = stop
        self.ops = []
        self.errors = []  # error replies: a write refused is not acknowledged

    def value(self, seq, tag):
        return f"{self.rnd}.{self.conn}.{seq}.{tag}:" + "v" * self.r.randint(8, 300)

    def next_op(self, seq):
        r = self.r
        kind = r.choices(["set", "incr", "rpush", "hset", "multi", "eval"], [35, 15, 20, 15, 10, 5])[0]
        ident = f"{self.rnd}.{self.conn}.{seq}"
        if kind == "set":
            op = Op(kind, self.rnd, self.conn, seq, None, ((f"s:{ident}", self.value(seq, "s")),))
            cmds = [("SET",) + op.items[0]]
        elif kind == "incr":
            op = Op(kind, self.rnd, self.conn, seq, r.choice(COUNTERS), ())
            cmds = [("INCR", op.target)]
        elif kind == "rpush":
            op = Op(kind, self.rnd, self.conn, seq, r.choice(LISTS), (ident,))
            cmds = [("RPUSH", op.target, ident)]
        elif kind == "hset":
            op = Op(kind, self.rnd, self.conn, seq, r.choice(HASHES), ((ident, self.value(seq, "h")),))
            cmds = [("HSET", op.target) + op.items[0]]
        elif kind == "multi":
            n = r.randint(2, 4)
            items = tuple((f"tx:{ident}:{j}", self.value(seq, f"t{j}")) for j in range(n))
            op = Op(kind, self.rnd, self.conn, seq, None, items)
            cmds = [("MULTI",)] + [("SET", k, v) for k, v in items] + [("INCR", TX_COUNTER), ("EXEC",)]
        else:
            items = tuple((f"ev:{ident}:{j}", self.value(seq, f"e{j}")) for j in range(2))
            op = Op(kind, self.rnd, self.conn, seq, None, items)
            cmds = [("EVAL", SCRIPT, 3, items[0][0], items[1][0], EV_COUNTER, items[0][1], items[1][1])]
        return op, cmds

    @staticmethod
    def success(kind, replies):
        """Whether the replies read are the success replies of `kind`."""
        if kind == "multi":
            *queued, ex = replies
            return (queued[0] == "OK" and all(q == "QUEUED" for q in queued[1:])
                    and isinstance(ex, list) and all(not isinstance(x, ReplyError) for x in ex))
        (reply,) = replies
        if kind == "set":
            return reply == "OK"
        return isinstance(reply, int)

    def run(self):
        try:
            c = Client(self.port, timeout=CLIENT_TIMEOUT)
        except OSError:
            return
        seq = 0
        try:
            while not self.stop.is_set():
                op, cmds = self.next_op(seq)
                seq += 1
                self.ops.append(op)
                for cmd in cmds:
                    c.send(*cmd)
                replies = []
                try:
                    for _ in cmds:
                        replies.append(c.read())
                except ReplyError as e:
                    # A refused command in a MULTI block leaves the rest
                    # unread; the connection is then out of step.
                    self.errors.append(f"{op.name()}: {e}")
                    break
                if self.success(op.kind, replies):
                    op.ack_gen = self.ledger.gen
                    op.acked = True
                else:
                    self.errors.append(f"{op.name()}: unexpected reply {replies!r}")
                    break
        except (OSError, ValueError):
            pass  # the kill: the op in flight stays unacknowledged
        finally:
            c.close()


def info_fields(client, section="persistence"):
    text = client.call("INFO", section)
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


def switch_done(fields):
    """The rewrite that CONFIG SET appendonly yes started has finished
    well: from here on what was acknowledged during the switch is on
    disk."""
    return (fields.get("aof_enabled") == "1" and fields.get("aof_rewrite_in_progress") == "0"
            and fields.get("aof_rewrite_scheduled") == "0" and fields.get("aof_last_bgrewrite_status") == "ok")


def chaos_plan(seed, rnd):
    """(time, action) pairs, the kill time, and how the kill is placed:
    'plain' (at its time), 'after-rewrite' (right after a BGREWRITEAOF
    reply) or 'after-switch' (right after CONFIG SET appendonly yes)."""
    r = rng(seed, "crash", "chaos", rnd)
    kill_at = r.uniform(0.3, 1.3)
    events = []
    for _ in range(r.randint(1, 4)):
        action = r.choices(["bgrewriteaof", "bgsave", "switch"], [3, 2, 1])[0]
        t = r.uniform(0.02, kill_at)
        if action == "switch":
            events.append((t, "appendonly-no"))
            events.append((min(t + r.uniform(0.005, 0.15), kill_at), "appendonly-yes"))
        else:
            events.append((t, action))
    mode = r.choices(["plain", "after-rewrite", "after-switch"], [5, 3, 1])[0]
    events.sort()
    return events, kill_at, mode


class Chaos(threading.Thread):
    """Runs the round's plan against the server, closes switch windows
    when their rewrite is seen done, then kills the server."""

    def __init__(self, server, seed, rnd, ledger, stop):
        super().__init__(daemon=True, name="chaos")
        self.server = server
        self.events, self.kill_at, self.mode = chaos_plan(seed, rnd)
        self.ledger = ledger
        self.stop = stop
        self.counts = {}
        self.kill_state = "idle"

    def count(self, what):
        self.counts[what] = self.counts.get(what, 0) + 1

    def do(self, c, action):
        """Sends one action; returns True when its reply was a success."""
        try:
            if action == "bgrewriteaof":
                c.call("BGREWRITEAOF")
            elif action == "bgsave":
                c.call("BGSAVE")
            elif action == "appendonly-no":
                if self.ledger.gen % 2 == 0:
                    self.ledger.open_window()
                c.call("CONFIG", "SET", "appendonly", "no")
            elif action == "appendonly-yes":
                c.call("CONFIG", "SET", "appendonly", "yes")
            self.count(action)
            return True
        except ReplyError:
            self.count(action + " refused")
            return False

    def run(self):
        t0 = time.monotonic()
        try:
            c = Client(self.server.port, timeout=2.0)
        except OSError:
            c = None
        events = list(self.events)
        try:
            while c is not None:
                now = time.monotonic() - t0
                if self.ledger.gen % 2 == 1 and not any(a == "appendonly-yes" for _, a in events):
                    if switch_done(info_fields(c)):
                        self.ledger.close_window()
                while events and events[0][0] <= now:
                    _, action = events.pop(0)
                    self.do(c, action)
                if now >= self.kill_at:
                    if self.mode == "after-rewrite":
                        if self.do(c, "bgrewriteaof"):
                            self.kill_state = "right after BGREWRITEAOF"
                    elif self.mode == "after-switch":
                        if self.ledger.gen % 2 == 0:
                            self.do(c, "appendonly-no")
                        if self.do(c, "appendonly-yes"):
                            self.kill_state = "right after a switch"
                    if self.kill_state == "idle":
                        f = info_fields(c)
                        if f.get("aof_rewrite_in_progress") == "1":
                            self.kill_state = "mid-rewrite"
                        elif f.get("rdb_bgsave_in_progress") == "1":
                            self.kill_state = "mid-save"
                        elif self.ledger.gen % 2 == 1:
                            self.kill_state = "mid-switch"
                    break
                time.sleep(0.005)
        except (OSError, ValueError):
            self.kill_state = "server stopped answering"
        finally:
            self.server.kill9()
            self.stop.set()
            if c is not None:
                c.close()


# ---------------------------------------------------------------- verify


def pipeline(client, cmds):
    for cmd in cmds:
        client.send(*cmd)
    return [client.read() for _ in cmds]


def mget(client, keys):
    out = {}
    for i in range(0, len(keys), 500):
        chunk = keys[i:i + 500]
        for k, v in zip(chunk, client.call("MGET", *chunk)):
            out[k] = v
    return out


def all_keys(client):
    keys = set()
    cursor = b"0"
    while True:
        cursor, batch = client.call("SCAN", cursor, "COUNT", 1000)
        keys.update(k.decode() for k in batch)
        if cursor in (b"0", "0"):
            return keys


def parse_ident(element):
    """'r.c.i' -> (r, c, i), or None."""
    try:
        r, c, i = element.split(".")
        return int(r), int(c), int(i)
    except ValueError:
        return None


def verify(client, ledger):
    """Checks the loaded dataset against every write of every round so far.
    Returns (lost, problems): `lost` counts writes newly found missing or
    broken, `problems` describes them. Each write's loss is counted once,
    in the round that finds it.

    - SET: a promised key holds exactly its value; any key present holds
      the value that was sent.
    - MULTI/EXEC and EVAL: the block's keys are all present with their
      values or all absent (atomicity); a promised block is present; the
      counter each block increments equals the number of blocks present.
    - INCR: each counter is >= the promised INCRs and <= the INCRs sent.
    - RPUSH: every promised element is present, at most once; nothing that
      was not sent is present; promised elements of one connection keep
      their order, and those of a round come after the earlier rounds'.
    - HSET: every promised field holds its value; any field present holds
      the value sent.
    - No key exists that was never written.
    """
    lost = 0
    problems = []
    ops = ledger.ops

    def missing(op, why):
        nonlocal lost
        if id(op) in ledger.reported:
            return
        ledger.reported.add(id(op))
        lost += 1
        problems.append(f"{op.name()} {why}")

    string_keys = [k for op in ops if op.kind in ("set", "multi", "eval") for k, _ in op.items]
    values = mget(client, string_keys)
    blocks_present = {"multi": 0, "eval": 0}
    for op in ops:
        if op.kind == "set":
            (k, v), = op.items
            got = values[k]
            if got is None:
                if op.promised:
                    missing(op, f"acknowledged, key {k} missing")
            elif got.decode() != v:
                missing(op, f"key {k} holds {got[:40]!r}, not the value sent")
        elif op.kind in ("multi", "eval"):
            got = [values[k] for k, _ in op.items]
            present = [g is not None for g in got]
            if all(present):
                blocks_present[op.kind] += 1
                bad = [k for (k, v), g in zip(op.items, got) if g.decode() != v]
                if bad:
                    missing(op, f"keys {bad} hold values other than those sent")
            elif any(present):
                there = [k for (k, _), p in zip(op.items, present) if p]
                missing(op, f"not atomic: only {there} of {[k for k, _ in op.items]} present"
                        + (" (acknowledged)" if op.acked else " (not acknowledged)"))
            elif op.promised:
                missing(op, f"acknowledged, none of its keys {[k for k, _ in op.items]} present")

    counters = COUNTERS + [TX_COUNTER, EV_COUNTER]
    got = dict(zip(counters, pipeline(client, [("GET", k) for k in counters])))
    for name in counters:
        v = int(got[name]) if got[name] is not None else 0
        if name in (TX_COUNTER, EV_COUNTER):
            kind = "multi" if name == TX_COUNTER else "eval"
            key = (name, "exact")
            if v != blocks_present[kind] and key not in ledger.reported:
                ledger.reported.add(key)
                lost += 1
                problems.append(f"{name} is {v} but {blocks_present[kind]} {kind} blocks are present "
                                f"(each block increments it atomically with its keys)")
            continue
        promised = sum(1 for op in ops if op.kind == "incr" and op.target == name and op.promised)
        sent = sum(1 for op in ops if op.kind == "incr" and op.target == name)
        deficit = max(0, promised - v)
        if deficit > ledger.counter_deficit.get(name, 0):
            lost += deficit - ledger.counter_deficit.get(name, 0)
            ledger.counter_deficit[name] = deficit
            problems.append(f"{name} is {v}, below the {promised} acknowledged INCRs")
        if v > sent and (name, "excess") not in ledger.reported:
            ledger.reported.add((name, "excess"))
            lost += 1
            problems.append(f"{name} is {v}, above the {sent} INCRs sent")

    lists = pipeline(client, [("LRANGE", k, 0, -1) for k in LISTS])
    for name, elements in zip(LISTS, lists):
        sent = {op.items[0]: op for op in ops if op.kind == "rpush" and op.target == name}
        seen = set()
        last = {}        # (round, conn) -> last promised seq seen
        last_round = -1  # round of the last promised element seen
        for raw in elements:
            e = raw.decode()
            op = sent.get(e)
            if op is None:
                key = (name, "unknown", e)
                if key not in ledger.reported:
                    ledger.reported.add(key)
                    lost += 1
                    problems.append(f"{name} holds {e!r}, which was never pushed to it")
                continue
            if e in seen:
                missing(op, f"element {e} twice in {name}")
                continue
            seen.add(e)
            if not op.promised:
                continue
            rc = (op.round, op.conn)
            if op.round < last_round or last.get(rc, -1) >= op.seq:
                missing(op, f"element {e} out of order in {name}")
            last[rc] = max(last.get(rc, -1), op.seq)
            last_round = max(last_round, op.round)
        for e, op in sent.items():
            if op.promised and e not in seen:
                missing(op, f"acknowledged, element {e} missing from {name}")

    hashes = pipeline(client, [("HGETALL", k) for k in HASHES])
    for name, flat in zip(HASHES, hashes):
        fields = {flat[i].decode(): flat[i + 1].decode() for i in range(0, len(flat), 2)}
        sent = {op.items[0][0]: op for op in ops if op.kind == "hset" and op.target == name}
        for f, v in fields.items():
            op = sent.get(f)
            if op is None:
                key = (name, "unknown", f)
                if key not in ledger.reported:
                    ledger.reported.add(key)
                    lost += 1
                    problems.append(f"{name} has field {f!r}, which was never set")
            elif v != op.items[0][1]:
                missing(op, f"field {f} of {name} holds another value")
        for f, op in sent.items():
            if op.promised and f not in fields:
                missing(op, f"acknowledged, field {f} missing from {name}")

    known = set(string_keys) | set(counters) | set(LISTS) | set(HASHES)
    for k in sorted(all_keys(client) - known):
        key = ("unknown key", k)
        if key not in ledger.reported:
            ledger.reported.add(key)
            lost += 1
            problems.append(f"key {k!r} exists but was never written")
    return lost, problems


# ---------------------------------------------------------------- files


def aof_dir(data):
    return os.path.join(data, "appendonlydir")


def manifest_names(data):
    """The file names the manifest lists (Redis's format: `file <name>
    seq <n> type <b|h|i>` per line), or None without a manifest."""
    path = os.path.join(aof_dir(data), "appendonly.aof.manifest")
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    names = set()
    for line in text.splitlines():
        parts = line.split()
        for i in range(0, len(parts) - 1, 2):
            if parts[i] == "file":
                names.add(parts[i + 1].strip('"'))
    return names


def listing(data):
    """The data directory's files with their sizes, and the manifest."""
    lines = []
    for d in (data, aof_dir(data)):
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p):
                lines.append(f"      {os.path.relpath(p, data)}  {os.path.getsize(p)} bytes")
    try:
        with open(os.path.join(aof_dir(data), "appendonly.aof.manifest"), errors="replace") as f:
            manifest = f.read()
    except OSError:
        manifest = "(no manifest)\n"
    return "\n".join(lines) + "\n    manifest:\n" + "".join(f"      {l}\n" for l in manifest.splitlines())


def leftovers(data, since):
    """Temp files older than `since` (the round's start) and files of
    the append-only directory that the manifest does not name, older than
    `since`: what the round's own kill cannot explain."""
    temps, orphans = [], []
    named = manifest_names(data)
    for d in (data, aof_dir(data)):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            p = os.path.join(d, n)
            try:
                old = os.path.getmtime(p) < since
            except OSError:
                continue
            if not old:
                continue
            rel = os.path.relpath(p, data)
            if n.startswith("temp-"):
                temps.append(rel)
            elif d != data and named is not None and n not in named and n != "appendonly.aof.manifest":
                orphans.append(rel)
    return sorted(temps), sorted(orphans)


# ---------------------------------------------------------------- rounds


def wait_for_binary(path, timeout=120):
    """The binary may be briefly absent while it is rebuilt."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def run_server(kind, seed, rounds, args):
    """`rounds` kill -9 rounds on one data directory, then a last restart
    and verification (the module's docstring). Every loss, broken block
    and refused start is counted in `lost` and described in the notes with
    its round, the seed, the log tails and the directory's files."""
    res = Result(SCENARIO, kind, promised=True)
    ledger = Ledger()
    base = scratch_dir(f"crash-{kind}")
    data = os.path.join(base, "data")
    logs = os.path.join(base, "logs")
    os.makedirs(logs)
    rerun = f"rerun: scripts/torture --only crash --servers {kind} --seed {seed} --rounds {rounds}"
    kill_states = {}
    chaos_counts = {}
    writer_errors = []
    temp_seen, orphan_seen = {}, {}
    failed = False
    srv = None
    for rnd in range(rounds + 1):
        final = rnd == rounds
        srv = CrashServer(kind, data, round_config(seed, rnd), os.path.join(logs, f"round-{rnd}.log"))
        started = time.time()
        if not wait_for_binary(srv.binary):
            res.notes.append(f"round {rnd} (seed {seed}): {srv.binary} is missing")
            res.lost += 1
            failed = True
            break
        try:
            srv.start()
        except (RuntimeError, OSError) as e:
            srv.kill9()
            outstanding = sum(1 for op in ledger.ops if op.promised and id(op) not in ledger.reported)
            res.lost += max(1, outstanding)
            res.notes.append(f"round {rnd} (seed {seed}): refused to start on the directory the last kill "
                             f"left; its {outstanding} acknowledged writes are unreachable. {rerun}\n"
                             f"    config: {srv.config}\n" + indent(str(e)) + f"    files:\n{listing(data)}")
            failed = True
            break
        try:
            c = srv.client(timeout=30)
            try:
                lost, problems = verify(c, ledger)
            finally:
                c.close()
        except (OSError, ValueError, ReplyError) as e:
            lost, problems = 1, [f"verification could not read the dataset: {e!r}"]
        if lost:
            res.lost += lost
            shown = "\n    ".join(problems[:NOTE_EXAMPLES])
            more = f"\n    ... and {len(problems) - NOTE_EXAMPLES} more" if len(problems) > NOTE_EXAMPLES else ""
            when = f"after the restart that followed round {rnd - 1}'s kill" if rnd else "at the first start"
            res.notes.append(f"round {rnd} (seed {seed}), {when}: "
                             f"{lost} lost or broken. {rerun}\n    {shown}{more}\n"
                             f"    config at restart: {srv.config}\n"
                             f"    log before the kill ({os.path.basename(logs)}/round-{rnd - 1}.log):\n"
                             + tail(os.path.join(logs, f"round-{rnd - 1}.log"))
                             + f"    log of the restart:\n" + tail(srv.log_path)
                             + f"    files:\n{listing(data)}")
            failed = True
        if final:
            srv.kill9()
            break

        stop = threading.Event()
        writers = [Writer(srv.port, seed, rnd, i, ledger, stop) for i in range(WRITERS)]
        chaos = Chaos(srv, seed, rnd, ledger, stop)
        for w in writers:
            w.start()
        chaos.start()
        chaos.join(timeout=60)
        if chaos.is_alive():
            srv.kill9()
            stop.set()
            res.notes.append(f"round {rnd} (seed {seed}): the chaos thread did not finish within 60 s")
        for w in writers:
            w.join(timeout=2 * CLIENT_TIMEOUT)
            if w.is_alive():
                res.notes.append(f"round {rnd} (seed {seed}): writer {w.conn} still blocked after the kill")
        ops = [op for w in writers for op in w.ops]
        ledger.close_round(ops)
        res.rounds += 1
        res.acked += sum(1 for op in ops if op.acked)
        kill_states[chaos.kill_state] = kill_states.get(chaos.kill_state, 0) + 1
        for k, v in chaos.counts.items():
            chaos_counts[k] = chaos_counts.get(k, 0) + v
        writer_errors += [f"round {rnd}: {e}" for w in writers for e in w.errors]
        temps, orphans = leftovers(data, started)
        for t in temps:
            temp_seen.setdefault(t, rnd)
        for o in orphans:
            orphan_seen.setdefault(o, rnd)

    res.notes.append("kills: " + ", ".join(f"{v} {k}" for k, v in sorted(kill_states.items())))
    res.notes.append("chaos: " + ", ".join(f"{v} {k}" for k, v in sorted(chaos_counts.items())))
    if ledger.unpromised:
        res.notes.append(f"{ledger.unpromised} acknowledged writes fell in a switch the kill interrupted "
                         f"(not promised, not counted)")
    if writer_errors:
        res.notes.append(f"{len(writer_errors)} write(s) refused with an error reply, e.g. {writer_errors[0]}")
    if temp_seen:
        res.notes.append(f"{len(temp_seen)} temp file(s) outlived the round that wrote them: "
                         + ", ".join(f"{t} (still there after round {r}'s kill)"
                                     for t, r in sorted(temp_seen.items(), key=lambda x: x[1])[:8]))
    if orphan_seen:
        res.notes.append(f"{len(orphan_seen)} file(s) in appendonlydir that the manifest does not name "
                         f"outlived their round: "
                         + ", ".join(f"{t} (still there after round {r}'s kill)"
                                     for t, r in sorted(orphan_seen.items(), key=lambda x: x[1])[:8]))
    if srv is not None:
        srv.kill9()
    if failed and args.keep:
        res.notes.append(f"kept: {base}")
    else:
        remove_dir(base)
    return res


def indent(text, prefix="      "):
    return "".join(f"{prefix}{l}\n" for l in text.splitlines())


def tail(path, lines=20):
    try:
        with open(path, errors="replace") as f:
            got = f.readlines()[-lines:]
    except OSError:
        return "      (no log)\n"
    return "".join(f"      {l.rstrip()}\n" for l in got)


def run(args):
    rounds = args.rounds if args.rounds is not None else DEFAULT_ROUNDS
    results = []
    for kind in args.servers:
        t0 = time.monotonic()
        res = run_server(kind, args.seed, rounds, args)
        if args.verbose:
            print(f"crash: {kind} {res.rounds} rounds in {time.monotonic() - t0:.1f} s", flush=True)
        results.append(res)
    return results
