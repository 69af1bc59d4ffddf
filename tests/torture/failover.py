"""failover: writes that WAIT confirmed survive a Sentinel failover.

A primary, two replicas and three redis-sentinels (quorum 2), all on
127.0.0.1, ports of their own. Writer threads SET unique keys on the
primary, each SET followed by `WAIT 1 100`. At a seeded moment the primary
is killed with SIGKILL; the sentinels elect a leader, which promotes one
of the replicas (`SLAVEOF NO ONE`) and moves the other under it. As soon
as a sentinel names the new primary and that replica answers ROLE as a
master, every write is read back from it: each one WAIT counted on at
least one replica must be there with its value. What is there at that
moment counts; nothing is given more time.

Writes the server acknowledged but WAIT did not confirm (WAIT answered 0,
or the connection died before WAIT answered) carry no promise; their fate
is reported, not judged.

One set of processes per server kind serves every round: after a round,
the killed node is started again (empty) as a replica of the new primary,
and the next round begins once the three sentinels agree on the primary,
see both replicas linked to it and each other, and no failover is in
progress. A round that cannot finish (no promotion within the time
limit, a process that will not start) is reported; the processes are
then replaced for the next round. On goblin-server such a round fails the
run, as does a lost confirmed write.

The kill moments come from the seed (`rng(seed, "failover", round)`),
the same for both servers.
"""

import os
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass, field

from common import (SENTINEL, Client, ReplyError, Server, free_port, remove_dir, rng,
                    scratch_dir)
from main import Result

MASTER_NAME = "mymaster"
QUORUM = 2
SENTINELS = 3
WRITERS = 3
# WAIT's numreplicas and timeout, after every write.
WAIT_REPLICAS = 1
WAIT_TIMEOUT_MS = 100
# The sentinels consider the primary down after this long without a
# valid PING reply: short, so that a round is short, but above 1000 ms
# and a timer tick. A sentinel reconnects to an instance at most once a
# second, so right after it switches to the new primary its link may take
# that long to come back; with a shorter down-after it then takes the new
# primary for down (and the other sentinels' replies that the primary
# was down, from the failover just done, still count for five seconds)
# and fails over once more.
DOWN_AFTER_MS = 1500
# Bounds a failover's steps, and the retry after a failed election
# (2 x failover-timeout): short, so that a failed attempt is retried soon.
FAILOVER_TIMEOUT_MS = 2000
# Rounds per server when --failover is not given (the CI run).
CI_ROUNDS = 2
# Upper bounds of every wait, in seconds.
START_TIMEOUT = 30
STEADY_TIMEOUT = 60
PROMOTION_TIMEOUT = 30
FIRST_CONFIRMS_TIMEOUT = 10
# The kill comes this many seconds after every writer had a write
# confirmed (uniform, from the round's seed).
KILL_DELAY = (0.05, 1.0)

# The same for both servers: no persistence (a restarted node starts
# empty and takes a full copy from the primary), full syncs without delay.
SERVER_CONFIG = {
    "save": "",
    "appendonly": "no",
    "repl-diskless-sync-delay": 0,
}


class RoundError(Exception):
    """A round that could not be carried out to its check (a timeout, a
    process that would not start): the message says which wait failed."""


class FailoverResult(Result):
    """Result, which also fails when a goblin-server round could not be
    carried out: Sentinel must be able to fail over a Goblin primary."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.broken_rounds = 0

    def failed(self):
        return super().failed() or (self.server == "goblin" and self.broken_rounds > 0)


@dataclass
class Write:
    """One SET: `replicas` is WAIT's answer, None when the SET or the WAIT
    got no reply (the connection died first)."""
    key: str
    value: str
    writer: int
    seq: int
    set_ok: bool = False
    replicas: object = None
    error: str = ""

    @property
    def confirmed(self):
        return self.replicas is not None and self.replicas >= WAIT_REPLICAS


@dataclass
class RoundOutcome:
    """What one round did and found."""
    number: int
    promoted_port: int = 0
    killed_port: int = 0
    kill_delay: float = 0.0
    failover_seconds: float = 0.0
    writes: list = field(default_factory=list)
    lost: list = field(default_factory=list)
    # Writes without the promise, by fate.
    unconfirmed_there: int = 0
    unconfirmed_missing: int = 0
    in_doubt_there: int = 0
    in_doubt_missing: int = 0
    # Each replica's applied offset once its link to the killed primary
    # was down (port -> offset), and the promoted node's offset as master.
    offsets_at_kill: dict = field(default_factory=dict)
    promoted_offset: int = 0
    errors: list = field(default_factory=list)

    @property
    def confirmed(self):
        return [w for w in self.writes if w.confirmed]


def poll(what, timeout, probe, interval=0.02):
    """Calls `probe` until it returns something other than None (a value
    that is then returned) or `timeout` seconds pass; `probe` may return
    (None, why) to say what is still missing. Raises RoundError naming
    `what` and the last reason."""
    deadline = time.monotonic() + timeout
    why = ""
    while True:
        try:
            got = probe()
        except (OSError, ReplyError) as e:
            got = (None, f"{type(e).__name__}: {e}")
        if isinstance(got, tuple) and len(got) == 2 and got[0] is None:
            why = got[1]
        elif got is not None:
            return got
        if time.monotonic() > deadline:
            raise RoundError(f"{what}: not within {timeout} s ({why})")
        time.sleep(interval)


def call(port, *args, timeout=2.0):
    """One command on a fresh connection to 127.0.0.1:port."""
    c = Client(port, timeout=timeout)
    try:
        return c.call(*args)
    finally:
        c.close()


def text(v):
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


def pairs(flat):
    """A flat [name, value, name, value...] reply as a dict of str."""
    return {text(flat[i]): text(flat[i + 1]) for i in range(0, len(flat) - 1, 2)}


def info(port, section="replication"):
    """INFO <section> as a dict of str."""
    out = {}
    for line in text(call(port, "INFO", section)).splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v
    return out


class Sentinel:
    """A redis-sentinel on a port of its own with a configuration file it
    may rewrite, watching MASTER_NAME."""

    def __init__(self, directory, primary_port):
        self.dir = directory
        self.port = free_port()
        self.conf = os.path.join(directory, f"sentinel-{self.port}.conf")
        self.log_path = os.path.join(directory, f"sentinel-{self.port}.log")
        lines = [
            f"port {self.port}",
            "bind 127.0.0.1",
            f"dir {directory}",
            f"logfile {self.log_path}",
            "sentinel resolve-hostnames no",
            f"sentinel monitor {MASTER_NAME} 127.0.0.1 {primary_port} {QUORUM}",
            f"sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}",
            f"sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}",
            f"sentinel parallel-syncs {MASTER_NAME} 1",
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([SENTINEL, self.conf], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                     cwd=self.dir)

        def ready():
            if self.proc.poll() is not None:
                raise RoundError(f"redis-sentinel exited with {self.proc.returncode}:\n{self.log_tail()}")
            return True if call(self.port, "PING") == "PONG" else None
        poll(f"sentinel {self.port} answers PING", START_TIMEOUT, ready)

    def kill9(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()

    def master_port(self):
        """The primary's port according to this sentinel (None if it
        names none)."""
        addr = call(self.port, "SENTINEL", "get-master-addr-by-name", MASTER_NAME)
        return int(addr[1]) if addr else None

    def master(self):
        return pairs(call(self.port, "SENTINEL", "MASTER", MASTER_NAME))

    def replicas(self):
        return [pairs(r) for r in call(self.port, "SENTINEL", "REPLICAS", MASTER_NAME)]

    def log_tail(self, lines=20):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"


class Group:
    """Three data nodes of one kind (one primary, two replicas) and three
    sentinels, in one scratch directory, kept across rounds."""

    def __init__(self, kind):
        self.kind = kind
        self.root = scratch_dir(f"failover-{kind}")
        self.nodes = []
        self.sentinels = []
        self.primary = None

    def node(self, name, primary_port=None):
        s = Server(self.kind, os.path.join(self.root, name), dict(SERVER_CONFIG))
        s.name = name
        s.log_path = os.path.join(self.root, f"{name}.log")
        if primary_port is not None:
            s.config["replicaof"] = f"127.0.0.1 {primary_port}"
        return s

    def start(self):
        self.primary = self.node("a").start(timeout=START_TIMEOUT)
        self.nodes = [self.primary]
        for name in ("b", "c"):
            self.nodes.append(self.node(name, self.primary.port).start(timeout=START_TIMEOUT))
        self.wait_replicated()
        for _ in range(SENTINELS):
            s = Sentinel(self.root, self.primary.port)
            self.sentinels.append(s)
            s.start()
        self.wait_steady()

    @property
    def replicas(self):
        return [n for n in self.nodes if n is not self.primary]

    def by_port(self, port):
        return next((n for n in self.nodes if n.port == port), None)

    def replication_state(self, primary):
        """True when the two other nodes are replicas of `primary`, linked
        and done syncing, and `primary` is a master with two replicas;
        otherwise (None, what is missing)."""
        for r in self.nodes:
            if r is primary:
                continue
            i = info(r.port)
            if (i.get("role") != "slave" or i.get("master_port") != str(primary.port)
                    or i.get("master_link_status") != "up" or i.get("master_sync_in_progress") != "0"):
                return None, f"{r.name} ({r.port}): role {i.get('role')}, master_port " \
                             f"{i.get('master_port')}, link {i.get('master_link_status')}"
        i = info(primary.port)
        if i.get("role") != "master" or i.get("connected_slaves") != "2":
            return None, f"primary {primary.port}: role {i.get('role')}, " \
                         f"connected_slaves {i.get('connected_slaves')}"
        return True

    def wait_replicated(self):
        """Until both replicas are linked to the primary and done syncing."""
        poll("both replicas linked to the primary", STEADY_TIMEOUT,
             lambda: self.replication_state(self.primary))

    def wait_steady(self):
        """Until the three sentinels name one of the nodes as the primary,
        see no failover in progress, the two others linked to it as
        replicas, and the two other sentinels; and the nodes agree: the
        state a failover can start from. The primary is then whichever
        node the sentinels name (usually the one last promoted; another
        if they failed over again meanwhile, which the result notes)."""
        def steady():
            named = {s.master_port() for s in self.sentinels}
            if len(named) != 1:
                return None, f"the sentinels name {sorted(named, key=str)}"
            primary = self.by_port(named.pop())
            if primary is None:
                return None, "the sentinels name no node of this group"
            want = {n.port for n in self.nodes if n is not primary}
            for s in self.sentinels:
                m = s.master()
                if m.get("flags") != "master" or m.get("num-other-sentinels") != str(SENTINELS - 1):
                    return None, f"sentinel {s.port}: flags {m.get('flags')}, " \
                                 f"other sentinels {m.get('num-other-sentinels')}"
                reps = s.replicas()
                good = {int(r["port"]) for r in reps
                        if r.get("flags") == "slave" and r.get("master-link-status") == "ok"
                        and r.get("master-port") == str(primary.port)}
                if good != want or len(reps) != len(want):
                    return None, f"sentinel {s.port}: replicas " + ", ".join(
                        f"{r.get('port')} {r.get('flags')} link {r.get('master-link-status')}" for r in reps)
            state = self.replication_state(primary)
            if state is not True:
                return state
            return primary
        primary = poll("sentinels agree on a primary and its two replicas", STEADY_TIMEOUT, steady,
                       interval=0.05)
        moved = primary is not self.primary
        self.primary = primary
        return moved

    def close(self, keep=False):
        """Kills every process (SIGKILL: nothing here needs a clean
        shutdown) and removes the directory unless `keep`."""
        for s in self.sentinels:
            s.kill9()
        for n in self.nodes:
            if n.proc is not None:
                n.kill9()
        if not keep:
            remove_dir(self.root)


def writer(port, tag, index, stop, out):
    """Writes unique keys to the primary on `port` until `stop` is set or
    the connection fails, each SET followed by WAIT; appends a Write per
    SET sent to `out`."""
    try:
        c = Client(port, timeout=5)
    except OSError:
        return
    seq = 0
    try:
        while not stop.is_set():
            w = Write(f"failover:{tag}:{index}:{seq}", f"{tag}:{index}:{seq}", index, seq)
            out.append(w)
            seq += 1
            try:
                if c.call("SET", w.key, w.value) != "OK":
                    w.error = "SET did not answer OK"
                    return
                w.set_ok = True
                w.replicas = c.call("WAIT", WAIT_REPLICAS, WAIT_TIMEOUT_MS)
            except ReplyError as e:
                w.error = str(e)
                return
            except OSError:
                return
    finally:
        c.close()


def read_back(port, writes):
    """Each write's value on the server at `port` (None where absent)."""
    c = Client(port, timeout=10)
    try:
        got = []
        for i in range(0, len(writes), 500):
            chunk = writes[i:i + 500]
            got.extend(c.call("MGET", *[w.key for w in chunk]))
        if len(got) != len(writes):
            raise RoundError(f"MGET answered {len(got)} values for {len(writes)} keys")
        return got
    finally:
        c.close()


def link_down_offset(port):
    """The replica's applied offset once it has noticed that its primary
    is gone (None if it does not within a few seconds)."""
    def down():
        i = info(port)
        if i.get("master_link_status") == "up":
            return None, "link still up"
        return int(i.get("slave_repl_offset", i.get("master_repl_offset", "-1")))
    try:
        return poll(f"replica {port} sees its link down", 5, down, interval=0.005)
    except RoundError:
        return None


def run_round(group, seed, number, verbose):
    """One failover round on a steady group; returns its RoundOutcome and
    leaves `group.primary` on the promoted node."""
    r = rng(seed, "failover", number)
    out = RoundOutcome(number)
    out.kill_delay = r.uniform(*KILL_DELAY)
    old = group.primary
    out.killed_port = old.port
    tag = f"{seed}:{number}"
    stop = threading.Event()
    lists = [[] for _ in range(WRITERS)]
    threads = [threading.Thread(target=writer, args=(old.port, tag, i, stop, lists[i]), daemon=True)
               for i in range(WRITERS)]
    for t in threads:
        t.start()
    try:
        def each_writer_confirmed():
            if all(any(w.confirmed for w in list(ws)) for ws in lists):
                return True
            if not any(t.is_alive() for t in threads):
                return None, "every writer stopped"
            return None, f"confirmed per writer: {[sum(w.confirmed for w in list(ws)) for ws in lists]}"
        poll("each writer has a write confirmed by WAIT", FIRST_CONFIRMS_TIMEOUT, each_writer_confirmed)
        time.sleep(out.kill_delay)  # the seeded moment of the kill
        old.kill9()
        killed_at = time.monotonic()
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
    if any(t.is_alive() for t in threads):
        raise RoundError("a writer thread did not stop within 10 s")
    for ws in lists:
        out.writes.extend(ws)
    for rep in group.replicas:
        out.offsets_at_kill[rep.port] = link_down_offset(rep.port)

    replica_ports = {rep.port for rep in group.replicas}
    asked = [0]

    def promoted():
        s = group.sentinels[asked[0] % len(group.sentinels)]
        asked[0] += 1
        try:
            port = s.master_port()
        except (OSError, ReplyError) as e:
            return None, f"sentinel {s.port}: {e}"
        if port not in replica_ports:
            return None, f"sentinel {s.port} names {port}"
        role = call(port, "ROLE")
        if text(role[0]) != "master":
            return None, f"sentinel {s.port} names {port}, whose ROLE is {text(role[0])}"
        return port, int(role[1])
    try:
        out.promoted_port, out.promoted_offset = poll(
            "a sentinel names a replica that answers ROLE as master", PROMOTION_TIMEOUT, promoted, interval=0.01)
    except RoundError as e:
        tails = "\n".join(f"--- sentinel {s.port}:\n{s.log_tail()}" for s in group.sentinels)
        raise RoundError(f"{e}\n{tails}") from None
    out.failover_seconds = time.monotonic() - killed_at

    got = read_back(out.promoted_port, out.writes)
    for w, v in zip(out.writes, got):
        there = v == w.value.encode()
        if v is not None and not there:
            # A value that is neither absent nor ours would mean a key was
            # reused: count it lost wherever the promise applied.
            out.errors.append(f"{w.key} holds {v!r}, not {w.value!r}")
        if w.confirmed:
            if not there:
                out.lost.append(w)
        elif w.set_ok and w.replicas == 0:
            if there:
                out.unconfirmed_there += 1
            else:
                out.unconfirmed_missing += 1
        elif w.error:
            out.errors.append(f"{w.key}: {w.error}")
        else:
            if there:
                out.in_doubt_there += 1
            else:
                out.in_doubt_missing += 1

    group.primary = group.by_port(out.promoted_port)
    if verbose:
        print(f"  failover {group.kind} round {number}: killed {old.port} after {out.kill_delay:.2f} s, "
              f"promoted {out.promoted_port} in {out.failover_seconds:.1f} s; "
              f"{len(out.confirmed)} confirmed, {len(out.lost)} lost; offsets at kill {out.offsets_at_kill}, "
              f"promoted at {out.promoted_offset}", flush=True)
    return out


def rejoin(group, killed):
    """Starts the killed node again, empty, as a replica of the new
    primary, and waits until the group is steady again; True if the
    sentinels failed over once more meanwhile (the primary moved)."""
    remove_dir(killed.dir)
    killed.config["replicaof"] = f"127.0.0.1 {group.primary.port}"
    killed.start(timeout=START_TIMEOUT)
    return group.wait_steady()


def describe_lost(w, out, kind, seed):
    return (f"LOST {kind} round {out.number} (seed {seed}): {w.key} = {w.value!r}, WAIT said {w.replicas}; "
            f"killed {out.killed_port}, promoted {out.promoted_port} at offset {out.promoted_offset}; "
            f"replica offsets when their links went down {out.offsets_at_kill}")


def summarize(kind, outcomes, broken, seed, kept_dir):
    res = FailoverResult(scenario=f"failover (Sentinel, WAIT {WAIT_REPLICAS} {WAIT_TIMEOUT_MS})",
                         server=kind)
    res.rounds = len(outcomes)
    res.broken_rounds = len(broken)
    confirmed = [w for o in outcomes for w in o.confirmed]
    res.acked = len(confirmed)
    res.lost = sum(len(o.lost) for o in outcomes)
    if outcomes:
        times = sorted(o.failover_seconds for o in outcomes)
        res.notes.append(f"new primary {times[0]:.1f}-{times[-1]:.1f} s after the kill "
                         f"(median {statistics.median(times):.1f}); {WRITERS} writers, killed "
                         f"{KILL_DELAY[0]}-{KILL_DELAY[1]} s after each had a write confirmed")
        by2 = sum(1 for w in confirmed if w.replicas >= 2)
        res.notes.append(f"confirmed by WAIT: {by2} on 2 replicas, {len(confirmed) - by2} on 1")
        uc_t = sum(o.unconfirmed_there for o in outcomes)
        uc_m = sum(o.unconfirmed_missing for o in outcomes)
        id_t = sum(o.in_doubt_there for o in outcomes)
        id_m = sum(o.in_doubt_missing for o in outcomes)
        res.notes.append(f"not promised: WAIT answered 0 for {uc_t + uc_m} ({uc_t} on the new primary, "
                         f"{uc_m} not); no reply before the kill for {id_t + id_m} ({id_t} there, {id_m} not)")
        differ = [o for o in outcomes
                  if len({v for v in o.offsets_at_kill.values()}) > 1]
        if differ:
            behind = sum(1 for o in differ
                         if None not in o.offsets_at_kill.values()
                         and o.offsets_at_kill.get(o.promoted_port) != max(o.offsets_at_kill.values()))
            res.notes.append(f"replica offsets differed after the kill in {len(differ)} rounds; "
                             f"the one behind was promoted in {behind}")
    for o in outcomes:
        for msg in o.errors[:3]:
            res.notes.append(f"round {o.number}: {msg}")
        for w in o.lost[:5]:
            res.notes.append(describe_lost(w, o, kind, seed))
        if len(o.lost) > 5:
            res.notes.append(f"... and {len(o.lost) - 5} more lost in round {o.number}")
    for number, msg in broken:
        res.notes.append(f"round {number} (seed {seed}) did not complete: {msg}")
    if kept_dir:
        res.notes.append(f"processes' logs and data kept in {kept_dir}")
    return res


def run_server(kind, args):
    rounds = args.failover_rounds if args.failover else CI_ROUNDS
    outcomes, broken, kept = [], [], []
    moved = 0
    group = None
    keep_group = False
    try:
        for number in range(rounds):
            try:
                if group is None:
                    t0 = time.monotonic()
                    group = Group(kind)
                    keep_group = False
                    group.start()
                    if args.verbose:
                        print(f"  failover {kind}: started and steady in {time.monotonic() - t0:.1f} s",
                              flush=True)
                else:
                    t0 = time.monotonic()
                    moved += rejoin(group, killed)
                    if args.verbose:
                        print(f"  failover {kind}: steady again {time.monotonic() - t0:.1f} s after the "
                              f"check, primary {group.primary.port}", flush=True)
                killed = group.primary
                out = run_round(group, args.seed, number, args.verbose)
                outcomes.append(out)
                if out.lost or out.errors:
                    keep_group = keep_group or args.keep
            except (RoundError, OSError, ReplyError, RuntimeError) as e:
                broken.append((number, f"{type(e).__name__}: {e}"))
                if args.verbose:
                    print(f"  failover {kind} round {number}: {e}", flush=True)
                if group is not None:
                    group.close(keep=args.keep)
                    if args.keep:
                        kept.append(group.root)
                    group = None
    finally:
        if group is not None:
            group.close(keep=keep_group)
            if keep_group:
                kept.append(group.root)
    res = summarize(kind, outcomes, broken, args.seed, ", ".join(kept))
    if moved:
        res.notes.append(f"between rounds, the sentinels failed over once more {moved} times "
                         f"(the next round started from the primary they named)")
    return res


def run(args):
    """Every round on each server of args.servers; one Result per server."""
    return [run_server(kind, args) for kind in args.servers]
