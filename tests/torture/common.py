"""What every torture scenario shares: the two servers under test
(goblin-server and Debian's redis-server, started the same way), a small
RESP client, and seeded randomness.

Standard library only: the scenarios must run on a fresh machine after
scripts/setup, and a failure must point at the server, not at a client
library.
"""

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARIES = {
    # $GOBLIN_SERVER names another build (./scripts/test's profile).
    "goblin": os.environ.get("GOBLIN_SERVER") or os.path.join(ROOT, "target", "release", "goblin-server"),
    "redis": "/usr/bin/redis-server",
}
SENTINEL = "/usr/bin/redis-sentinel"


class ReplyError(Exception):
    """An error reply (-ERR ..., -MISCONF ...): the server answered."""


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Client:
    """One connection speaking RESP2. `call` returns the decoded reply and
    raises ReplyError for an error reply, OSError when the connection
    fails or closes (the write is then not acknowledged)."""

    def __init__(self, port, host="127.0.0.1", timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.sock.makefile("rb")

    def close(self):
        try:
            self.f.close()
            self.sock.close()
        except OSError:
            pass

    def settimeout(self, seconds):
        self.sock.settimeout(seconds)

    def send(self, *args):
        self.sock.sendall(encode(*args))

    def read(self):
        line = self.f.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("connection closed")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode(errors="replace")
        if kind == b"-":
            raise ReplyError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            if len(data) != n + 2:
                raise ConnectionError("connection closed")
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            if n < 0:
                return None
            items = []
            for _ in range(n):
                try:
                    items.append(self.read())
                except ReplyError as e:
                    items.append(e)
            return items
        raise ConnectionError(f"unexpected reply {line!r}")

    def call(self, *args):
        self.send(*args)
        return self.read()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A goblin-server or redis-server on a port of its own, data in
    `directory`, configured with `config` (directive -> value, passed on
    the command line as both servers take it)."""

    def __init__(self, kind, directory, config=None, port=None, binary=None):
        self.kind = kind
        self.binary = binary or BINARIES[kind]
        self.dir = directory
        self.port = port or free_port()
        self.config = dict(config or {})
        self.proc = None
        self.log_path = os.path.join(tempfile.gettempdir(), f"torture-{kind}-{self.port}.log")

    def argv(self):
        argv = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
                "--logfile", self.log_path]
        for k, v in self.config.items():
            argv += [f"--{k}", str(v)]
        return argv

    def start(self, wait=True, timeout=60):
        os.makedirs(self.dir, exist_ok=True)
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT, cwd=self.dir)
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=60):
        """Until PING answers (LOADING counts as not yet); raises with the
        log's tail when the process exits first or the time runs out."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                c = Client(self.port, timeout=2)
                try:
                    if c.call("PING") == "PONG":
                        return
                finally:
                    c.close()
            except (OSError, ReplyError):
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited with {self.proc.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.kind} did not answer within {timeout} s:\n{self.log_tail()}")
            time.sleep(0.02)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def client(self, timeout=10.0):
        return Client(self.port, timeout=timeout)

    def kill9(self):
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait()

    def stop(self, timeout=30):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill9()

    def log_tail(self, lines=30):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"


def scratch_dir(prefix):
    return tempfile.mkdtemp(prefix=f"torture-{prefix}-")


def remove_dir(path):
    shutil.rmtree(path, ignore_errors=True)


def rng(seed, *salt):
    """A random source for one round: the same seed and salt give the
    same round again (printed with every failure)."""
    return random.Random(f"{seed}:{':'.join(str(s) for s in salt)}")
