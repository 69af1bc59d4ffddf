"""faultfs: a FUSE file system that passes every call through to a backing
directory and fails on request, for the disk scenarios of scripts/torture.

What it can do to the programs that use the mount point:
- ENOSPC: a write (or a truncate / fallocate that grows a file) that would
  take the live files past `limit` bytes is cut short, or refused with
  ENOSPC when nothing fits; statfs reports the same room. Limit 0 refuses
  every write that grows a file at once.
- EIO on write, fsync (files and directories) or rename, each optionally
  only for paths matching a glob (fnmatch against the path inside the
  mount, e.g. "*.manifest", "*incr.aof"; "*" matches "/" too) and
  optionally only the next K matching calls. A rename matches when either
  its source or its destination does. A failed call changes nothing.
- Power loss: every file goes back to what was durable (below).

How the harness drives it
-------------------------
The file system runs as a process of its own (FUSE's loop blocks, takes
over SIGINT/SIGTERM and would compete for the GIL with the harness's
clients), on mfusepy (PyPI, a ctypes binding) over libfuse3; as root it
mounts without fusermount3:

    python3 faultfs.py BACKING MOUNTPOINT --control SOCKET [--metadata strict|ordered]
        [--parent PID]   (unmount and exit when PID is gone)

`FaultFS` (harness side, no FUSE import needed) starts that process, waits
until the mount answers, speaks its control protocol, and stops it by
unmounting. The protocol: one connection per request on the Unix socket
SOCKET, one JSON object per line each way ("errno" may name any errno).

    {"cmd": "ping"}                                   -> {"ok": true}
    {"cmd": "fault", "op": "write"|"fsync"|"rename",
     "glob": "*", "count": null|K, "errno": "EIO"}    -> {"ok": true}
    {"cmd": "clear", "op": null|"write"|...}          -> {"ok": true}   (null: all)
    {"cmd": "enospc", "limit": N|null}                -> {"ok": true, "used": bytes}
    {"cmd": "sync"}                                   -> everything durable now
    {"cmd": "crash"}                                  -> {"ok": true, "dropped_bytes": ..., "files": {...}}
    {"cmd": "counters"}                               -> {"ok": true, "counters": {...}}
    {"cmd": "durable"}                                -> {"ok": true, "files": {path: size}}

Counters: writes, write_bytes, fsyncs (files), fsyncdirs, renames,
creates, unlinks, crashes, faults (per kind: write, fsync, rename,
enospc), dropped_bytes (at the last crash).

The mount is set up so that every call reaches this process: direct_io
(no page cache between the programs and us: a write is a FUSE write, an
fsync is a FUSE fsync), entry/attribute/negative timeouts 0 (after a crash
nothing stale is cached), hard_remove (an unlinked open file is really
unlinked, no .fuse_hidden files in the namespace), fsyncdir implemented
(otherwise the kernel answers a directory fsync itself). The loop is
single-threaded; the control thread takes the same lock.

Durability model (what `crash` keeps)
-------------------------------------
Data: each file's durable content is its content at its last successful
fsync or fdatasync (both commit data and size); a file never fsynced is
durable as empty. A failed (injected) fsync commits nothing; the data stay
pending and a later fsync that succeeds commits them.

Directory entries (create, mkdir, rename, unlink, rmdir), two models:
- strict (default, what POSIX promises): an entry change is durable only
  once its directory is fsynced; fsync of a file does not make its name
  durable. A program that creates a file, fsyncs it and never fsyncs the
  directory loses the file. A directory renamed across parents needs both
  parents fsynced.
- ordered (a journalling file system such as ext4): entry changes are
  durable in the order they were made, and any successful fsync,
  fdatasync or directory fsync commits all that came before it.

Everything in the backing directory when the mount starts is durable;
while mounted, the backing directory belongs to faultfs (change it only
through the mount). After `crash` the backing directory holds exactly the
durable state: files whose entry was durable come back with their durable
content (empty if never fsynced), files whose entry was not are gone,
unlinked files whose removal was not durable come back. Open handles are
dropped (the programs were killed before). Mode bits and times are not
modelled. Durable copies live beside the backing directory
(BACKING.durable), never inside the mount.
"""

import argparse
import errno as errno_mod
import fnmatch
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

FAULT_OPS = ("write", "fsync", "rename")


# ----------------------------------------------------------------------------
# Harness side
# ----------------------------------------------------------------------------

class FaultFSError(RuntimeError):
    pass


def mounted(path):
    """Whether `path` is a mount point, also when its FUSE process died
    (os.path.ismount then fails on "Transport endpoint is not connected")."""
    real = os.path.realpath(path)
    try:
        with open("/proc/self/mounts") as f:
            return any(line.split()[1] == real for line in f)
    except OSError:
        return os.path.ismount(path)


class FaultFS:
    """The fault-injecting mount, from the harness: start() mounts (in a
    process of its own), the methods below steer it, stop() unmounts
    whatever happened. Also a context manager."""

    def __init__(self, backing, mountpoint, control=None, metadata="strict", log_path=None):
        self.backing = backing
        self.mountpoint = mountpoint
        self.control = control or os.path.join(os.path.dirname(os.path.abspath(backing)), "faultfs.sock")
        if len(self.control) > 100:  # sun_path holds 108 bytes
            self.control = os.path.join(tempfile.mkdtemp(prefix="faultfs-"), "control.sock")
        self.metadata = metadata
        self.log_path = log_path or os.path.join(os.path.dirname(os.path.abspath(backing)), "faultfs.log")
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def start(self, timeout=20.0):
        os.makedirs(self.backing, exist_ok=True)
        os.makedirs(self.mountpoint, exist_ok=True)
        if os.path.exists(self.control):
            os.unlink(self.control)
        log = open(self.log_path, "ab")
        try:
            # A session of its own: a Ctrl-C in the harness's terminal must
            # not unmount under the servers; the harness's cleanup does it.
            self.proc = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), self.backing, self.mountpoint,
                 "--control", self.control, "--metadata", self.metadata, "--parent", str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise FaultFSError(f"faultfs exited with {self.proc.returncode}:\n{self.log_tail()}")
            if mounted(self.mountpoint):
                try:
                    self.request("ping", timeout=2.0)
                    return self
                except (OSError, FaultFSError):
                    pass
            if time.monotonic() > deadline:
                self.stop()
                raise FaultFSError(f"faultfs did not mount within {timeout} s:\n{self.log_tail()}")
            time.sleep(0.02)

    def stop(self, timeout=10.0):
        """Unmounts and ends the process; never raises (it runs in cleanup
        paths). The programs using the mount must have been stopped."""
        if self.proc is None:
            return
        if mounted(self.mountpoint):
            r = subprocess.run(["umount", self.mountpoint], capture_output=True)
            if r.returncode != 0:
                subprocess.run(["umount", "-l", self.mountpoint], capture_output=True)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if mounted(self.mountpoint):
            subprocess.run(["umount", "-l", self.mountpoint], capture_output=True)
        self.proc = None

    def log_tail(self, lines=30):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def request(self, cmd, timeout=30.0, **fields):
        fields["cmd"] = cmd
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(self.control)
            s.sendall(json.dumps(fields).encode() + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        if not buf:
            raise FaultFSError(f"faultfs closed the control connection on {cmd}")
        reply = json.loads(buf)
        if not reply.get("ok"):
            raise FaultFSError(f"faultfs refused {cmd}: {reply.get('error')}")
        return reply

    def fault(self, op, glob="*", count=None, errno="EIO"):
        """From now on, `op` ("write", "fsync" or "rename") on a path
        matching `glob` fails with `errno`; only the next `count` such calls
        when count is given."""
        self.request("fault", op=op, glob=glob, count=count, errno=errno)

    def clear(self, op=None):
        """Lifts the fault on `op`, or every EIO fault when op is None."""
        self.request("clear", op=op)

    def enospc(self, limit):
        """Writes past `limit` bytes in all fail with ENOSPC; None lifts it.
        Returns the bytes the live files hold now."""
        return self.request("enospc", limit=limit)["used"]

    def sync(self):
        """Makes everything durable now (a clean starting point)."""
        self.request("sync")

    def crash(self):
        """Power loss: every file back to its durable state (the programs
        using the mount must be dead). Returns the reply: dropped_bytes and
        the files left ({path: size})."""
        return self.request("crash")

    def counters(self):
        return self.request("counters")["counters"]

    def durable(self):
        return self.request("durable")["files"]


def self_check(workdir):
    """Checks the durability model and the faults on a fresh mount, without
    any server: a failed check here means the harness itself is wrong.
    Returns a list of problems (empty when all is well)."""
    problems = []

    def expect(cond, what):
        if not cond:
            problems.append(what)

    fs = FaultFS(os.path.join(workdir, "backing"), os.path.join(workdir, "mnt"))
    fs.start()
    try:
        m = fs.mountpoint
        os.mkdir(os.path.join(m, "d"))
        rfd = os.open(m, os.O_RDONLY)
        os.fsync(rfd)  # the name "d" is durable
        os.close(rfd)
        dfd = os.open(os.path.join(m, "d"), os.O_RDONLY)
        fs.fault("write", glob="*/faulty")
        try:
            with open(os.path.join(m, "d", "faulty"), "wb", buffering=0) as f:
                f.write(b"y")
            problems.append("an injected write EIO did not reach the writer")
        except OSError as e:
            expect(e.errno == errno_mod.EIO, f"write fault gave {e!r}")
        fs.clear()
        os.unlink(os.path.join(m, "d", "faulty"))
        fs.fault("fsync", count=1)
        try:
            os.fsync(dfd)
            problems.append("an injected fsync EIO did not reach the caller")
        except OSError as e:
            expect(e.errno == errno_mod.EIO, f"fsync fault gave {e!r}")
        os.fsync(dfd)  # count=1: this one succeeds
        synced = os.path.join(m, "d", "synced")
        fd = os.open(synced, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(fd, b"durable")
        os.fsync(fd)
        os.write(fd, b"-pending")
        os.close(fd)
        with open(os.path.join(m, "d", "never"), "wb") as f:
            f.write(b"never fsynced")
        os.fsync(dfd)  # both names durable now
        os.close(dfd)
        with open(os.path.join(m, "d", "unnamed"), "wb") as f:
            f.write(b"x")
            f.flush()
            os.fsync(f.fileno())  # data durable, name not (strict)
        with open(synced, "rb") as f:
            expect(f.read() == b"durable-pending", "a read sees what was written")
        c = fs.counters()
        expect(c["faults"]["write"] == 1 and c["faults"]["fsync"] == 1, f"fault counters {c['faults']}")
        expect(c["fsyncs"] >= 2 and c["fsyncdirs"] >= 2, f"fsync counters {c}")
        fs.enospc(0)
        try:
            with open(os.path.join(m, "full"), "wb", buffering=0) as f:
                f.write(b"z")
            problems.append("ENOSPC did not reach the writer")
        except OSError as e:
            expect(e.errno == errno_mod.ENOSPC, f"enospc gave {e!r}")
        expect(os.statvfs(m).f_bavail == 0, "statfs shows no room under ENOSPC")
        fs.enospc(None)
        rep = fs.crash()
        files = rep["files"]
        expect(files.get("d/synced") == len(b"durable"), f"fsynced data kept, pending dropped: {files}")
        expect(files.get("d/never") == 0, f"a durable name never fsynced comes back empty: {files}")
        expect("d/unnamed" not in files, f"a name never made durable is gone (strict): {files}")
        expect("full" not in files, f"a file of a directory never fsynced is gone: {files}")
        with open(synced, "rb") as f:
            expect(f.read() == b"durable", "after the crash the mount shows the durable content")
    except OSError as e:
        problems.append(f"faultfs self-check: {e!r}")
    finally:
        fs.stop()
    expect(not mounted(fs.mountpoint), "unmounted")
    return problems


# ----------------------------------------------------------------------------
# File system side (runs in its own process)
# ----------------------------------------------------------------------------

class Node:
    __slots__ = ("id", "is_dir", "parent", "name", "dirty_from", "has_shadow")

    def __init__(self, nid, is_dir, parent, name):
        self.id = nid
        self.is_dir = is_dir
        self.parent = parent  # parent node id in the live tree; None once unlinked
        self.name = name
        # Lowest offset written (or cut) since the last fsync; None: clean.
        self.dirty_from = None
        # A copy of the durable content exists in the shadow directory.
        self.has_shadow = False


class Handle:
    __slots__ = ("fd", "node", "append")

    def __init__(self, fd, node, append):
        self.fd = fd
        self.node = node
        self.append = append


class Fault:
    __slots__ = ("glob", "count", "errno")

    def __init__(self, glob, count, errno):
        self.glob = glob
        self.count = count
        self.errno = errno


ROOT_ID = 1


def _operations_class():
    import mfusepy

    class FaultOps(mfusepy.Operations):
        use_ns = True

        def __init__(self, backing, shadow, metadata):
            self.backing = os.path.abspath(backing)
            self.shadow = shadow
            self.metadata = metadata
            self.mutex = threading.RLock()
            self.ids = itertools.count(ROOT_ID + 1)
            self.fhs = itertools.count(1)
            self.handles = {}
            self.faults = {}
            self.limit = None
            self.counters = {"writes": 0, "write_bytes": 0, "fsyncs": 0, "fsyncdirs": 0, "renames": 0,
                             "creates": 0, "unlinks": 0, "crashes": 0, "dropped_bytes": 0,
                             "faults": {"write": 0, "fsync": 0, "rename": 0, "enospc": 0}}
            os.makedirs(self.shadow, exist_ok=True)
            self._scan()

        # -- the two namespaces ------------------------------------------------

        def _scan(self):
            """Everything in the backing directory is durable at mount."""
            self.nodes = {ROOT_ID: Node(ROOT_ID, True, None, "")}
            self.children = {ROOT_ID: {}}

            def walk(nid, path):
                for name in sorted(os.listdir(path)):
                    p = os.path.join(path, name)
                    is_dir = os.path.isdir(p) and not os.path.islink(p)
                    cid = next(self.ids)
                    node = Node(cid, is_dir, nid, name)
                    self.nodes[cid] = node
                    self.children[nid][name] = cid
                    if is_dir:
                        self.children[cid] = {}
                        walk(cid, p)
                    else:
                        shutil.copyfile(p, self._shadow_path(cid))
                        node.has_shadow = True

            walk(ROOT_ID, self.backing)
            self.durable = {d: dict(c) for d, c in self.children.items()}
            self.used = self._measure()

        def _measure(self):
            total = 0
            for dirpath, _dirs, files in os.walk(self.backing):
                for f in files:
                    try:
                        total += os.lstat(os.path.join(dirpath, f)).st_size
                    except OSError:
                        pass
            return total

        def _shadow_path(self, nid):
            return os.path.join(self.shadow, str(nid))

        def _bpath(self, path):
            return os.path.join(self.backing, path.lstrip("/"))

        def _lookup(self, path):
            nid = ROOT_ID
            for part in path.strip("/").split("/"):
                if not part:
                    continue
                kids = self.children.get(nid)
                if kids is None or part not in kids:
                    raise OSError(errno_mod.ENOENT, "no such entry")
                nid = kids[part]
            return self.nodes[nid]

        def _split(self, path):
            parent, _, name = path.rstrip("/").rpartition("/")
            return self._lookup(parent or "/"), name

        def _node_path(self, node):
            parts = []
            while node is not None and node.id != ROOT_ID:
                parts.append(node.name)
                node = self.nodes.get(node.parent) if node.parent is not None else None
            return "/".join(reversed(parts))

        def _link(self, parent, name, node):
            self.children[parent.id][name] = node.id
            node.parent, node.name = parent.id, name

        def _commit_metadata(self, dir_node=None):
            if self.metadata == "ordered" or dir_node is None:
                self.durable = {d: dict(c) for d, c in self.children.items()}
            else:
                kids = self.children.get(dir_node.id, {})
                self.durable[dir_node.id] = dict(kids)
                for cid in kids.values():
                    if self.nodes[cid].is_dir:
                        self.durable.setdefault(cid, {})

        def _commit_data(self, node, fd):
            size = os.fstat(fd).st_size
            start = node.dirty_from if node.has_shadow else 0
            if start is None:
                return
            start = min(start, size)
            sfd = os.open(self._shadow_path(node.id), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                off = start
                while off < size:
                    chunk = os.pread(fd, min(1 << 20, size - off), off)
                    if not chunk:
                        break
                    os.pwrite(sfd, chunk, off)
                    off += len(chunk)
                os.ftruncate(sfd, size)
            finally:
                os.close(sfd)
            node.has_shadow = True
            node.dirty_from = None

        def _dirty(self, node, offset):
            node.dirty_from = offset if node.dirty_from is None else min(node.dirty_from, offset)

        # -- faults --------------------------------------------------------------

        def _check_fault(self, op, *paths):
            f = self.faults.get(op)
            if f is None:
                return
            if not any(p is not None and fnmatch.fnmatchcase(p, f.glob) for p in paths):
                return
            if f.count is not None:
                f.count -= 1
                if f.count <= 0:
                    del self.faults[op]
            self.counters["faults"][op] += 1
            raise OSError(f.errno, os.strerror(f.errno))

        def _room(self, growth):
            """How many of `growth` new bytes fit under the limit."""
            if self.limit is None or growth <= 0:
                return growth
            return max(0, min(growth, self.limit - self.used))

        def _handle(self, fh):
            h = self.handles.get(fh)
            if h is None:
                raise OSError(errno_mod.EBADF, "stale handle")
            return h

        # -- FUSE operations -------------------------------------------------------

        def init_with_config(self, conn_info, config_3):
            if config_3 is not None:
                config_3.entry_timeout = 0.0
                config_3.negative_timeout = 0.0
                config_3.attr_timeout = 0.0
                config_3.hard_remove = 1
                config_3.direct_io = 1

        def getattr(self, path, fh=None):
            with self.mutex:
                if fh is not None and fh in self.handles and self.handles[fh].fd is not None:
                    st = os.fstat(self.handles[fh].fd)
                else:
                    if path is None:
                        raise OSError(errno_mod.ENOENT, "no path")
                    self._lookup(path)
                    st = os.lstat(self._bpath(path))
            return {"st_mode": st.st_mode, "st_ino": st.st_ino, "st_nlink": st.st_nlink,
                    "st_size": st.st_size, "st_uid": st.st_uid, "st_gid": st.st_gid,
                    "st_blocks": st.st_blocks, "st_blksize": st.st_blksize,
                    "st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns, "st_ctime": st.st_ctime_ns}

        def access(self, path, amode):
            with self.mutex:
                self._lookup(path)
            return 0

        def readdir(self, path, fh):
            with self.mutex:
                node = self._lookup(path)
                return [".", ".."] + sorted(self.children.get(node.id, {}))

        def opendir(self, path):
            with self.mutex:
                node = self._lookup(path)
                if not node.is_dir:
                    raise OSError(errno_mod.ENOTDIR, "not a directory")
                fh = next(self.fhs)
                self.handles[fh] = Handle(None, node, False)
                return fh

        def releasedir(self, path, fh):
            with self.mutex:
                self.handles.pop(fh, None)
            return 0

        def fsyncdir(self, path, datasync, fh):
            with self.mutex:
                h = self.handles.get(fh)
                node = h.node if h is not None else self._lookup(path)
                self.counters["fsyncdirs"] += 1
                self._check_fault("fsync", self._node_path(node) or "/")
                self._commit_metadata(node)
            return 0

        def _open_backing(self, bpath, flags, mode=0o644, new=False):
            # Always read-write and never O_APPEND: reads for fsync's copy
            # and offsets computed here (O_APPEND is applied in write()).
            keep = flags & ~(os.O_ACCMODE | os.O_APPEND | getattr(os, "O_DIRECT", 0) | os.O_CREAT | os.O_EXCL
                             | os.O_TRUNC | os.O_NOCTTY)
            if new:
                keep |= os.O_CREAT | os.O_EXCL
            return os.open(bpath, os.O_RDWR | keep | os.O_CLOEXEC, mode)

        def open(self, path, flags):
            with self.mutex:
                node = self._lookup(path)
                if node.is_dir:
                    raise OSError(errno_mod.EISDIR, "is a directory")
                fd = self._open_backing(self._bpath(path), flags)
                if flags & os.O_TRUNC:
                    self._truncate_fd(node, fd, 0)
                fh = next(self.fhs)
                self.handles[fh] = Handle(fd, node, bool(flags & os.O_APPEND))
                return fh

        def create(self, path, mode, flags):
            with self.mutex:
                parent, name = self._split(path)
                if not parent.is_dir:
                    raise OSError(errno_mod.ENOTDIR, "not a directory")
                kids = self.children[parent.id]
                if name in kids:
                    if flags & os.O_EXCL:
                        raise OSError(errno_mod.EEXIST, "exists")
                    node = self.nodes[kids[name]]
                    fd = self._open_backing(self._bpath(path), flags)
                    if flags & os.O_TRUNC:
                        self._truncate_fd(node, fd, 0)
                else:
                    fd = self._open_backing(self._bpath(path), flags, mode, new=True)
                    os.fchmod(fd, mode & 0o7777)
                    node = Node(next(self.ids), False, None, name)
                    self.nodes[node.id] = node
                    self._link(parent, name, node)
                    self.counters["creates"] += 1
                fh = next(self.fhs)
                self.handles[fh] = Handle(fd, node, bool(flags & os.O_APPEND))
                return fh

        def read(self, path, size, offset, fh):
            with self.mutex:
                return os.pread(self._handle(fh).fd, size, offset)

        def write(self, path, data, offset, fh):
            with self.mutex:
                h = self._handle(fh)
                node = h.node
                self.counters["writes"] += 1
                size = os.fstat(h.fd).st_size
                if h.append:
                    offset = size
                self._check_fault("write", self._node_path(node))
                growth = max(0, offset + len(data) - size)
                room = self._room(growth)
                if room < growth:
                    keep = len(data) - (growth - room)
                    if keep <= 0:
                        self.counters["faults"]["enospc"] += 1
                        raise OSError(errno_mod.ENOSPC, os.strerror(errno_mod.ENOSPC))
                    data = data[:keep]
                n = os.pwrite(h.fd, data, offset)
                self._dirty(node, offset)
                self.used += max(0, offset + n - size)
                self.counters["write_bytes"] += n
                return n

        def _truncate_fd(self, node, fd, length):
            size = os.fstat(fd).st_size
            if length > size and self._room(length - size) < length - size:
                self.counters["faults"]["enospc"] += 1
                raise OSError(errno_mod.ENOSPC, os.strerror(errno_mod.ENOSPC))
            os.ftruncate(fd, length)
            if length != size:
                self._dirty(node, min(size, length))
            self.used += length - size

        def truncate(self, path, length, fh=None):
            with self.mutex:
                if fh is not None and fh in self.handles:
                    h = self.handles[fh]
                    self._truncate_fd(h.node, h.fd, length)
                    return 0
                node = self._lookup(path)
                fd = os.open(self._bpath(path), os.O_RDWR | os.O_CLOEXEC)
                try:
                    self._truncate_fd(node, fd, length)
                finally:
                    os.close(fd)
            return 0

        def fallocate(self, path, mode, offset, size, fh):
            with self.mutex:
                h = self._handle(fh)
                if mode != 0:
                    raise OSError(errno_mod.EOPNOTSUPP, "only plain fallocate")
                cur = os.fstat(h.fd).st_size
                if offset + size > cur:
                    self._truncate_fd(h.node, h.fd, offset + size)
            return 0

        def flush(self, path, fh):
            return 0

        def release(self, path, fh):
            with self.mutex:
                h = self.handles.pop(fh, None)
                if h is not None and h.fd is not None:
                    os.close(h.fd)
            return 0

        def fsync(self, path, datasync, fh):
            with self.mutex:
                h = self._handle(fh)
                self.counters["fsyncs"] += 1
                self._check_fault("fsync", self._node_path(h.node))
                if h.fd is not None:
                    self._commit_data(h.node, h.fd)
                if self.metadata == "ordered":
                    self._commit_metadata()
            return 0

        def mkdir(self, path, mode):
            with self.mutex:
                parent, name = self._split(path)
                os.mkdir(self._bpath(path), mode)
                node = Node(next(self.ids), True, None, name)
                self.nodes[node.id] = node
                self.children[node.id] = {}
                self._link(parent, name, node)
            return 0

        def rmdir(self, path):
            with self.mutex:
                parent, name = self._split(path)
                node = self._lookup(path)
                os.rmdir(self._bpath(path))
                del self.children[parent.id][name]
                self.children.pop(node.id, None)
                node.parent = None
            return 0

        def unlink(self, path):
            with self.mutex:
                parent, name = self._split(path)
                node = self._lookup(path)
                size = os.lstat(self._bpath(path)).st_size
                os.unlink(self._bpath(path))
                del self.children[parent.id][name]
                node.parent = None
                self.used -= size
                self.counters["unlinks"] += 1
            return 0

        def rename(self, old, new):
            with self.mutex:
                self.counters["renames"] += 1
                node = self._lookup(old)
                old_parent, old_name = self._split(old)
                new_parent, new_name = self._split(new)
                self._check_fault("rename", old.lstrip("/"), new.lstrip("/"))
                replaced_id = self.children[new_parent.id].get(new_name)
                replaced_size = 0
                if replaced_id is not None and not self.nodes[replaced_id].is_dir:
                    replaced_size = os.lstat(self._bpath(new)).st_size
                os.rename(self._bpath(old), self._bpath(new))
                del self.children[old_parent.id][old_name]
                if replaced_id is not None and replaced_id != node.id:
                    self.nodes[replaced_id].parent = None
                    self.children.pop(replaced_id, None)
                    self.used -= replaced_size
                self._link(new_parent, new_name, node)
            return 0

        def chmod(self, path, mode):
            with self.mutex:
                if path is not None:
                    os.chmod(self._bpath(path), mode & 0o7777)
            return 0

        def chown(self, path, uid, gid):
            with self.mutex:
                if path is not None:
                    os.chown(self._bpath(path), uid, gid)
            return 0

        def utimens(self, path, times=None):
            with self.mutex:
                if path is not None:
                    if times is None:
                        os.utime(self._bpath(path))
                    else:
                        os.utime(self._bpath(path), ns=(int(times[0]), int(times[1])))
            return 0

        def statfs(self, path):
            st = os.statvfs(self.backing)
            out = {"f_bsize": st.f_bsize, "f_frsize": st.f_frsize, "f_blocks": st.f_blocks,
                   "f_bfree": st.f_bfree, "f_bavail": st.f_bavail, "f_files": st.f_files,
                   "f_ffree": st.f_ffree, "f_favail": st.f_favail, "f_namemax": st.f_namemax}
            with self.mutex:
                if self.limit is not None:
                    unit = st.f_frsize or 4096
                    out["f_blocks"] = max(1, self.limit // unit)
                    out["f_bfree"] = out["f_bavail"] = max(0, self.limit - self.used) // unit
            return out

        # -- control -----------------------------------------------------------------

        def control(self, req):
            cmd = req.get("cmd")
            with self.mutex:
                if cmd == "ping":
                    return {}
                if cmd == "fault":
                    op = req.get("op")
                    if op not in FAULT_OPS:
                        raise ValueError(f"unknown fault op {op!r}")
                    err = getattr(errno_mod, str(req.get("errno") or "EIO"))
                    count = req.get("count")
                    self.faults[op] = Fault(req.get("glob") or "*", None if count is None else int(count), err)
                    return {}
                if cmd == "clear":
                    op = req.get("op")
                    if op is None:
                        self.faults.clear()
                    else:
                        self.faults.pop(op, None)
                    return {}
                if cmd == "enospc":
                    limit = req.get("limit")
                    self.used = self._measure()
                    self.limit = None if limit is None else int(limit)
                    return {"used": self.used}
                if cmd == "counters":
                    return {"counters": json.loads(json.dumps(self.counters))}
                if cmd == "sync":
                    for h in self.handles.values():
                        if h.fd is not None:
                            self._commit_data(h.node, h.fd)
                    for node in self.nodes.values():
                        if not node.is_dir and node.parent is not None and (
                                node.dirty_from is not None or not node.has_shadow):
                            fd = os.open(self._bpath(self._node_path(node)), os.O_RDONLY | os.O_CLOEXEC)
                            try:
                                self._commit_data(node, fd)
                            finally:
                                os.close(fd)
                    self._commit_metadata()
                    return {}
                if cmd == "durable":
                    return {"files": self._durable_files()}
                if cmd == "crash":
                    return self._crash()
                raise ValueError(f"unknown command {cmd!r}")

        def _durable_files(self):
            files = {}

            def walk(did, prefix, seen):
                for name, cid in sorted(self.durable.get(did, {}).items()):
                    node = self.nodes.get(cid)
                    if node is None or cid in seen:
                        continue
                    p = f"{prefix}{name}"
                    if node.is_dir:
                        walk(cid, p + "/", seen | {cid})
                    else:
                        sp = self._shadow_path(cid)
                        files[p] = os.path.getsize(sp) if node.has_shadow else 0
            walk(ROOT_ID, "", {ROOT_ID})
            return files

        def _crash(self):
            before = self._measure()
            for h in self.handles.values():
                if h.fd is not None:
                    os.close(h.fd)
            self.handles.clear()
            for name in os.listdir(self.backing):
                p = os.path.join(self.backing, name)
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p)
                else:
                    os.unlink(p)
            old_nodes, old_durable = self.nodes, self.durable
            self.nodes = {ROOT_ID: Node(ROOT_ID, True, None, "")}
            self.children = {ROOT_ID: {}}
            used_shadows = set()

            def build(old_did, new_did, path, seen):
                for name, cid in sorted(old_durable.get(old_did, {}).items()):
                    old = old_nodes.get(cid)
                    if old is None or cid in seen:
                        continue
                    nid = next(self.ids)
                    node = Node(nid, old.is_dir, new_did, name)
                    self.nodes[nid] = node
                    self.children[new_did][name] = nid
                    p = os.path.join(path, name)
                    if old.is_dir:
                        os.mkdir(p)
                        self.children[nid] = {}
                        build(cid, nid, p, seen | {cid})
                    else:
                        if old.has_shadow:
                            shutil.copyfile(self._shadow_path(cid), p)
                            shutil.copyfile(self._shadow_path(cid), self._shadow_path(nid))
                            used_shadows.add(cid)
                        else:
                            open(p, "wb").close()
                            open(self._shadow_path(nid), "wb").close()
                        node.has_shadow = True

            build(ROOT_ID, ROOT_ID, self.backing, {ROOT_ID})
            for cid, old in old_nodes.items():
                if not old.is_dir and old.has_shadow:
                    try:
                        os.unlink(self._shadow_path(cid))
                    except FileNotFoundError:
                        pass
            self.durable = {d: dict(c) for d, c in self.children.items()}
            self.used = self._measure()
            self.counters["crashes"] += 1
            self.counters["dropped_bytes"] = max(0, before - self.used)
            return {"dropped_bytes": before - self.used, "files": self._durable_files()}

    return FaultOps


def _serve_control(ops, path):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)
    while True:
        conn, _ = srv.accept()
        with conn:
            try:
                conn.settimeout(10)
                buf = b""
                while not buf.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
                try:
                    reply = ops.control(json.loads(buf))
                    reply["ok"] = True
                except Exception as e:  # reported to the harness, never fatal here
                    reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                conn.sendall(json.dumps(reply).encode() + b"\n")
            except OSError:
                pass


def _watch_parent(parent, mountpoint):
    """The harness died without unmounting: unmount lazily and leave."""
    while True:
        time.sleep(1.0)
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            subprocess.run(["umount", "-l", mountpoint], capture_output=True)
            time.sleep(2.0)
            os._exit(0)
        except PermissionError:
            pass


def main(argv):
    p = argparse.ArgumentParser(description="faultfs: a fault-injecting passthrough FUSE file system")
    p.add_argument("backing")
    p.add_argument("mountpoint")
    p.add_argument("--control", required=True, help="Unix socket for the control protocol")
    p.add_argument("--metadata", choices=("strict", "ordered"), default="strict")
    p.add_argument("--shadow", default=None, help="where durable copies live (default: BACKING.durable)")
    p.add_argument("--parent", type=int, default=None, help="unmount when this process is gone")
    p.add_argument("--debug", action="store_true")
    args = p.parse_args(argv)
    import logging
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="faultfs %(levelname)s %(message)s")
    import mfusepy
    backing = os.path.abspath(args.backing)
    shadow = args.shadow or backing.rstrip("/") + ".durable"
    if os.path.isdir(shadow):
        shutil.rmtree(shadow)
    ops = _operations_class()(backing, shadow, args.metadata)
    threading.Thread(target=_serve_control, args=(ops, args.control), daemon=True).start()
    if args.parent:
        threading.Thread(target=_watch_parent, args=(args.parent, args.mountpoint), daemon=True).start()
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    mfusepy.FUSE(ops, args.mountpoint, foreground=True, nothreads=True, debug=args.debug,
                 fsname="faultfs", subtype="faultfs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
