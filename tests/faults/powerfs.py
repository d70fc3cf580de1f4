"""A power-loss filesystem for the fault suite: a FUSE passthrough that keeps writes in memory
until they are synced, and drops (or tears) what was never synced at a "crash".

``python -m tests.faults.powerfs BACKING MOUNTPOINT --control SOCKET`` shows
``BACKING/root`` at ``MOUNTPOINT``. What a program writes is held in the daemon, per inode,
as a list of pending writes and truncations, overlaid on the backing file for reads and
sizes; ``fsync``/``fdatasync`` (or a write on an ``O_SYNC``/``O_DSYNC`` handle) writes them
to the backing file and syncs it. Names are passed through at once but remembered in an
undo log. With ``--dir-sync strict`` (POSIX's letter) a create, mkdir, unlink or rename
counts once its directory is fsynced (its destination directory for a rename); with
``--dir-sync file`` (ext4's journal in practice) any fsync counts every name operation made
before it, and the journal commits them all every ``COMMIT_INTERVAL`` seconds anyway.

A line on the control socket (:func:`control`) is one command:

``crash [torn] [SEED]``  the power fails: pending data is dropped, unsynced names are undone
                         (a replaced or unlinked file comes back from ``BACKING/trash``);
                         with ``torn`` a seeded random part of the pending data is written
                         back first, in random order, some writes only a few 512-byte sectors
                         of (torn, reordered writeback). Kill the programs using it first.
``eio on [SUBSTR]``      every fsync of a path containing SUBSTR fails with EIO from now on;
                         the data it covered stays readable but is never written back (as
                         Linux marks failed pages clean), so a crash loses it
``eio off``              fsyncs work again
``sync``                 write back everything (a clean shutdown)
``stats``                counters

Each command answers one line, ``ok key=value ...`` or ``error ...``. :func:`unavailable`
says why the layer cannot run here (no ``/dev/fuse``, no pyfuse3, no ``fusermount3``).
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import random
import shutil
import socket
import socketserver
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SECTOR = 512
COMMIT_INTERVAL = 5.0  # ext4's default journal commit interval (``--dir-sync file``)
SYNC_FLAGS = os.O_SYNC | os.O_DSYNC


def unavailable() -> str | None:
    """Why the power-loss layer cannot run here (None: it can)."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse (FUSE is not available in this kernel or container)"
    try:
        import pyfuse3  # noqa: F401
        import trio  # noqa: F401
    except ImportError as exc:
        return f"pyfuse3 cannot be imported ({exc}): pip install pyfuse3 (needs libfuse3-dev)"
    if shutil.which("fusermount3") is None:
        return "no fusermount3 (Debian package fuse3)"
    return None


# ---------------------------------------------------------------- pending data (pure)


@dataclass
class Op:
    """A pending write (``data`` not None) or truncation to ``size``."""

    offset: int = 0
    data: bytes | None = None
    size: int = 0
    lost: bool = False  # an fsync covering it failed: never written back


@dataclass
class Pending:
    """What was written to one inode and not synced yet, over its backing file ``fd``."""

    fd: int
    ops: list[Op] = field(default_factory=list)

    def size(self) -> int:
        size = os.fstat(self.fd).st_size
        for op in self.ops:
            size = max(size, op.offset + len(op.data)) if op.data is not None else op.size
        return size

    def read(self, offset: int, length: int) -> bytes:
        buf = bytearray(os.pread(self.fd, length, offset))
        size = os.fstat(self.fd).st_size
        end = offset + length
        for op in self.ops:
            if op.data is None:
                size = op.size
                if op.size - offset < len(buf):
                    del buf[max(0, op.size - offset) :]
                continue
            lo, hi = max(offset, op.offset), min(end, op.offset + len(op.data))
            size = max(size, op.offset + len(op.data))
            if lo >= hi:
                continue
            if len(buf) < hi - offset:
                buf.extend(bytes(hi - offset - len(buf)))
            buf[lo - offset : hi - offset] = op.data[lo - op.offset : hi - op.offset]
        want = max(0, min(length, size - offset))
        if len(buf) < want:
            buf.extend(bytes(want - len(buf)))
        return bytes(buf[:want])

    def write_back(self, ops: Iterable[Op]) -> None:
        for op in ops:
            if op.data is None:
                os.ftruncate(self.fd, op.size)
            else:
                os.pwrite(self.fd, op.data, op.offset)


def torn(ops: list[Op], rng: random.Random) -> list[Op]:
    """A random part of ``ops`` in a random order, some writes cut to a few sectors."""
    out: list[Op] = []
    for op in ops:
        if op.lost or rng.random() < 0.5:
            continue
        if op.data is not None and len(op.data) > SECTOR and rng.random() < 0.5:
            for start in range(0, len(op.data), SECTOR):
                if rng.random() < 0.5:
                    out.append(Op(op.offset + start, op.data[start : start + SECTOR]))
        else:
            out.append(op)
    rng.shuffle(out)
    return out


# ---------------------------------------------------------------- the filesystem


@dataclass
class Undo:
    """How to take back one name operation, and which directory's fsync makes it durable."""

    action: str  # "unlink" | "rmtree" | "rename" | "restore" | "mkdir"
    path: str
    other: str = ""
    commit_dir: str = ""
    at: float = field(default_factory=time.monotonic)


@dataclass
class Handle:
    fd: int
    inode: int
    append: bool
    sync: bool


def _make_ops() -> Any:  # noqa: C901 - one class; pyfuse3 is imported only where it runs
    import pyfuse3
    from pyfuse3 import FUSEError

    class PowerOps(pyfuse3.Operations):
        def __init__(self, backing: Path, dir_sync: str) -> None:
            super().__init__()
            self.root = str(backing / "root")
            self.trash = str(backing / "trash")
            os.makedirs(self.root, exist_ok=True)
            os.makedirs(self.trash, exist_ok=True)
            self.dir_sync = dir_sync
            self.lock = threading.Lock()
            self.paths: dict[int, str] = {pyfuse3.ROOT_INODE: self.root}
            self.handles: dict[int, Handle] = {}
            self.next_fh = 1
            self.pending: dict[int, Pending] = {}
            self.undo: list[Undo] = []
            self.eio: str | None = None
            self.trash_seq = 0
            self.stats = {"fsyncs": 0, "eio": 0, "crashes": 0, "dropped_ops": 0, "undone": 0}

        # ------------------------------------------------ helpers

        def _ino(self, path: str) -> int:
            if path == self.root:
                return int(pyfuse3.ROOT_INODE)
            return os.lstat(path).st_ino

        def _path(self, inode: int) -> str:
            try:
                return self.paths[inode]
            except KeyError:
                raise FUSEError(errno.ENOENT) from None

        def _attrs(self, path: str, inode: int) -> Any:
            try:
                st = os.lstat(path)
            except OSError as exc:
                raise FUSEError(exc.errno or errno.EIO) from None
            entry = pyfuse3.EntryAttributes()
            for name in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_rdev", "st_blksize"):
                setattr(entry, name, getattr(st, name))
            entry.st_size = st.st_size
            pending = self.pending.get(inode)
            if pending is not None and stat.S_ISREG(st.st_mode):
                entry.st_size = pending.size()
            entry.st_blocks = (entry.st_size + 511) // 512
            entry.st_atime_ns, entry.st_mtime_ns = st.st_atime_ns, st.st_mtime_ns
            entry.st_ctime_ns = st.st_ctime_ns
            entry.st_ino = inode
            entry.attr_timeout = 0
            entry.entry_timeout = 0
            self.paths[inode] = path
            return entry

        def _child(self, parent: int, name: bytes) -> str:
            return os.path.join(self._path(parent), os.fsdecode(name))

        def _to_trash(self, path: str) -> str:
            self.trash_seq += 1
            kept = os.path.join(self.trash, f"{self.trash_seq}")
            os.link(path, kept)
            return kept

        def _pending(self, inode: int, fd: int | None = None) -> Pending:
            p = self.pending.get(inode)
            if p is None:
                p = Pending(os.dup(fd) if fd is not None else os.open(self._path(inode), os.O_RDWR))
                self.pending[inode] = p
            return p

        def _flush(self, inode: int) -> None:
            p = self.pending.pop(inode, None)
            if p is not None:
                p.write_back(op for op in p.ops if not op.lost)
                os.fsync(p.fd)
                os.close(p.fd)

        def _commit(self, directory: str | None = None) -> None:
            """An fsync: of ``directory``, or of a file (None)."""
            if self.dir_sync == "file":  # the journal commits every name operation so far
                self.undo.clear()
            elif directory is not None:
                self.undo = [u for u in self.undo if u.commit_dir != directory]

        def _eio(self, path: str) -> bool:
            return self.eio is not None and self.eio in path

        # ------------------------------------------------ control (from another thread)

        def crash(self, tear: bool, seed: int) -> dict[str, int]:
            rng = random.Random(seed)
            with self.lock:
                dropped = 0
                for p in self.pending.values():
                    dropped += len(p.ops)
                    if tear:
                        p.write_back(torn(p.ops, rng))
                        os.fsync(p.fd)
                    os.close(p.fd)
                self.pending.clear()
                if self.dir_sync == "file":  # what the journal committed since
                    old = time.monotonic() - COMMIT_INTERVAL
                    self.undo = [u for u in self.undo if u.at > old]
                undone = 0
                for u in reversed(self.undo):
                    undone += 1
                    try:
                        self._take_back(u)
                    except OSError as exc:
                        log.warning("powerfs.undo_failed action=%s error=%s", u.action, exc)
                self.undo.clear()
                self.stats["crashes"] += 1
                self.stats["dropped_ops"] += dropped
                self.stats["undone"] += undone
                inodes = list(self.paths)
            for inode in inodes:  # the kernel's page cache must forget what was dropped
                try:
                    pyfuse3.invalidate_inode(inode, attr_only=False)
                except OSError:
                    pass
            return {"dropped": dropped, "undone": undone}

        def _take_back(self, u: Undo) -> None:
            if u.action == "unlink":
                os.unlink(u.path)
            elif u.action == "rmtree":
                shutil.rmtree(u.path)
            elif u.action == "mkdir":
                os.mkdir(u.path)
            elif u.action == "rename":  # u.path was renamed to u.other
                os.rename(u.other, u.path)
            elif u.action == "restore":  # u.other (in trash) goes back to u.path
                os.rename(u.other, u.path)

        def sync_all(self) -> None:
            with self.lock:
                for inode in list(self.pending):
                    self._flush(inode)
                self.undo.clear()

        # ------------------------------------------------ FUSE operations

        async def lookup(self, parent_inode: int, name: bytes, ctx: Any = None) -> Any:
            path = self._child(parent_inode, name)
            try:
                inode = self._ino(path)
            except OSError as exc:
                raise FUSEError(exc.errno or errno.ENOENT) from None
            return self._attrs(path, inode)

        async def getattr(self, inode: int, ctx: Any = None) -> Any:
            return self._attrs(self._path(inode), inode)

        async def setattr(self, inode: int, attr: Any, fields: Any, fh: Any, ctx: Any) -> Any:
            path = self._path(inode)
            with self.lock:
                try:
                    if fields.update_size:
                        h = self.handles.get(fh) if fh is not None else None
                        fd = None if h is None else h.fd
                        self._pending(inode, fd).ops.append(Op(size=attr.st_size))
                    if fields.update_mode:
                        os.chmod(path, stat.S_IMODE(attr.st_mode))
                    if fields.update_uid or fields.update_gid:
                        uid = attr.st_uid if fields.update_uid else -1
                        gid = attr.st_gid if fields.update_gid else -1
                        os.chown(path, uid, gid, follow_symlinks=False)
                    if fields.update_atime or fields.update_mtime:
                        st = os.lstat(path)
                        a = attr.st_atime_ns if fields.update_atime else st.st_atime_ns
                        m = attr.st_mtime_ns if fields.update_mtime else st.st_mtime_ns
                        os.utime(path, ns=(a, m), follow_symlinks=False)
                except OSError as exc:
                    raise FUSEError(exc.errno or errno.EIO) from None
                return self._attrs(path, inode)

        async def access(self, inode: int, mode: int, ctx: Any) -> bool:
            return True

        async def statfs(self, ctx: Any) -> Any:
            st = os.statvfs(self.root)
            out = pyfuse3.StatvfsData()
            for name in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail"):
                setattr(out, name, getattr(st, name))
            for name in ("f_files", "f_ffree", "f_favail", "f_namemax"):
                setattr(out, name, getattr(st, name))
            return out

        async def opendir(self, inode: int, ctx: Any) -> int:
            return inode

        async def readdir(self, fh: int, start_id: int, token: Any) -> None:
            path = self._path(fh)
            names = sorted(os.listdir(path))
            for i, name in enumerate(names[start_id:], start_id):
                child = os.path.join(path, name)
                try:
                    attrs = self._attrs(child, self._ino(child))
                except (OSError, FUSEError):
                    continue
                if not pyfuse3.readdir_reply(token, os.fsencode(name), attrs, i + 1):
                    break

        async def releasedir(self, fh: int) -> None:
            return None

        async def fsyncdir(self, fh: int, datasync: bool) -> None:
            path = self._path(fh)
            with self.lock:
                self.stats["fsyncs"] += 1
                if self._eio(path):
                    self.stats["eio"] += 1
                    raise FUSEError(errno.EIO)
                self._commit(directory=path)

        async def mkdir(self, parent_inode: int, name: bytes, mode: int, ctx: Any) -> Any:
            path = self._child(parent_inode, name)
            with self.lock:
                try:
                    os.mkdir(path, mode)
                except OSError as exc:
                    raise FUSEError(exc.errno or errno.EIO) from None
                self.undo.append(Undo("rmtree", path, commit_dir=os.path.dirname(path)))
                return self._attrs(path, self._ino(path))

        async def rmdir(self, parent_inode: int, name: bytes, ctx: Any) -> None:
            path = self._child(parent_inode, name)
            with self.lock:
                try:
                    os.rmdir(path)
                except OSError as exc:
                    raise FUSEError(exc.errno or errno.EIO) from None
                self.undo.append(Undo("mkdir", path, commit_dir=os.path.dirname(path)))

        async def unlink(self, parent_inode: int, name: bytes, ctx: Any) -> None:
            path = self._child(parent_inode, name)
            with self.lock:
                try:
                    kept = self._to_trash(path)
                    os.unlink(path)
                except OSError as exc:
                    raise FUSEError(exc.errno or errno.EIO) from None
                self.undo.append(Undo("restore", path, kept, commit_dir=os.path.dirname(path)))

        async def rename(
            self, p_old: int, name_old: bytes, p_new: int, name_new: bytes, flags: int, ctx: Any
        ) -> None:
            if flags:
                raise FUSEError(errno.EINVAL)
            old, new = self._child(p_old, name_old), self._child(p_new, name_new)
            with self.lock:
                try:
                    replaced = self._to_trash(new) if os.path.isfile(new) else None
                    os.rename(old, new)
                except OSError as exc:
                    raise FUSEError(exc.errno or errno.EIO) from None
                for ino, path in list(self.paths.items()):
                    if path == old or path.startswith(old + "/"):
                        self.paths[ino] = new + path[len(old) :]
                commit = os.path.dirname(new)
                if replaced is not None:  # undone after the rename is
                    self.undo.append(Undo("restore", new, replaced, commit_dir=commit))
                self.undo.append(Undo("rename", old, new, commit_dir=commit))

        async def open(self, inode: int, flags: int, ctx: Any) -> Any:
            path = self._path(inode)
            with self.lock:
                try:
                    fd = os.open(path, os.O_RDWR)
                except OSError as exc:
                    raise FUSEError(exc.errno or errno.EIO) from None
                if flags & os.O_TRUNC:
                    self._pending(inode).ops.append(Op(size=0))
                return self._new_handle(fd, inode, flags)

        def _new_handle(self, fd: int, inode: int, flags: int) -> Any:
            fh = self.next_fh
            self.next_fh += 1
            self.handles[fh] = Handle(
                fd, inode, bool(flags & os.O_APPEND), bool(flags & SYNC_FLAGS)
            )
            return pyfuse3.FileInfo(fh=fh)

        async def create(
            self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: Any
        ) -> Any:
            path = self._child(parent_inode, name)
            with self.lock:
                try:
                    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, mode)
                except OSError as exc:
                    raise FUSEError(exc.errno or errno.EIO) from None
                inode = self._ino(path)
                self.undo.append(Undo("unlink", path, commit_dir=os.path.dirname(path)))
                return self._new_handle(fd, inode, flags), self._attrs(path, inode)

        async def read(self, fh: int, off: int, size: int) -> bytes:
            h = self.handles[fh]
            with self.lock:
                p = self.pending.get(h.inode)
                if p is None:
                    return os.pread(h.fd, size, off)
                return p.read(off, size)

        async def write(self, fh: int, off: int, buf: bytes) -> int:
            h = self.handles[fh]
            with self.lock:
                p = self._pending(h.inode, h.fd)
                if h.append:
                    off = p.size()
                p.ops.append(Op(off, bytes(buf)))
                if h.sync:
                    self._sync_inode(h.inode)
            return len(buf)

        def _sync_inode(self, inode: int) -> None:
            self.stats["fsyncs"] += 1
            if self._eio(self.paths.get(inode, "")):
                self.stats["eio"] += 1
                for op in self.pending.get(inode, Pending(-1)).ops:
                    op.lost = True
                raise FUSEError(errno.EIO)
            self._flush(inode)
            self._commit()

        async def fsync(self, fh: int, datasync: bool) -> None:
            h = self.handles[fh]
            with self.lock:
                self._sync_inode(h.inode)

        async def flush(self, fh: int) -> None:
            return None

        async def release(self, fh: int) -> None:
            h = self.handles.pop(fh, None)
            if h is not None:
                os.close(h.fd)

        async def forget(self, inode_list: Any) -> None:
            return None

    return PowerOps


# ---------------------------------------------------------------- control socket


class _Control(socketserver.StreamRequestHandler):
    ops: Any = None

    def handle(self) -> None:
        line = self.rfile.readline().decode("ascii", "replace").split()
        try:
            reply = "ok " + _command(self.ops, line)
        except Exception as exc:
            reply = f"error {type(exc).__name__}: {exc}"
        self.wfile.write((reply.strip() + "\n").encode())


def _command(ops: Any, words: list[str]) -> str:
    if not words:
        raise ValueError("empty command")
    cmd, args = words[0], words[1:]
    if cmd == "crash":
        tear = "torn" in args
        seeds = [int(a) for a in args if a.isdigit()]
        got = ops.crash(tear, seeds[0] if seeds else 0)
        return " ".join(f"{k}={v}" for k, v in got.items())
    if cmd == "eio":
        with ops.lock:
            ops.eio = (args[1] if len(args) > 1 else "") if args and args[0] == "on" else None
        return f"eio={'off' if ops.eio is None else 'on'}"
    if cmd == "sync":
        ops.sync_all()
        return ""
    if cmd == "stats":
        with ops.lock:
            pending = sum(len(p.ops) for p in ops.pending.values())
            return " ".join(f"{k}={v}" for k, v in {**ops.stats, "pending": pending}.items())
    raise ValueError(f"unknown command {cmd!r}")


def control(sock_path: str | os.PathLike[str], command: str, timeout: float = 30.0) -> str:
    """Send one command to a powerfs daemon; its answer (``ok ...``), or RuntimeError."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(os.fspath(sock_path))
        s.sendall(command.encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    reply = data.decode().strip()
    if not reply.startswith("ok"):
        raise RuntimeError(f"powerfs {command!r}: {reply or 'no answer'}")
    return reply


def serve(backing: Path, mountpoint: Path, sock_path: Path, dir_sync: str) -> None:
    import pyfuse3
    import trio

    ops = _make_ops()(backing, dir_sync)
    _Control.ops = ops
    sock_path.unlink(missing_ok=True)
    server = socketserver.ThreadingUnixStreamServer(str(sock_path), _Control)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options = set(pyfuse3.default_options)
    options.discard("default_permissions")
    options |= {"fsname=powerfs", "subtype=powerfs"}
    pyfuse3.init(ops, str(mountpoint), options)
    print(f"powerfs ready {mountpoint}", flush=True)
    try:
        trio.run(pyfuse3.main)
    finally:
        server.shutdown()
        pyfuse3.close(unmount=True)


class PowerFS:
    """A powerfs daemon on ``mountpoint`` over ``backing`` (harness side)."""

    def __init__(self, backing: Path, mountpoint: Path, dir_sync: str = "strict") -> None:
        self.backing = backing
        self.mountpoint = mountpoint
        self.sock = backing / "control.sock"
        self.dir_sync = dir_sync
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = backing / "powerfs.log"

    def start(self, timeout: float = 20.0) -> None:
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "tests.faults.powerfs", str(self.backing)]
        cmd += [str(self.mountpoint), "--control", str(self.sock), "--dir-sync", self.dir_sync]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"powerfs exited {self.proc.returncode}: see {self.log}")
            if b"powerfs ready" in self.log.read_bytes() and self.sock.exists():
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"powerfs did not mount {self.mountpoint} within {timeout} s")

    def command(self, line: str) -> str:
        return control(self.sock, line)

    def crash(self, *, tear: bool = False, seed: int = 0) -> str:
        return self.command(f"crash {'torn ' if tear else ''}{seed}")

    def stop(self) -> None:
        """Unmount (lazily: a program may still hold it) and stop the daemon."""
        subprocess.run(
            ["fusermount3", "-u", "-z", str(self.mountpoint)], capture_output=True, check=False
        )
        if self.proc is not None:
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
            self.proc = None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.powerfs", description=__doc__)
    parser.add_argument("backing", type=Path)
    parser.add_argument("mountpoint", type=Path)
    parser.add_argument("--control", type=Path, required=True, help="the control socket")
    parser.add_argument("--dir-sync", choices=("strict", "file"), default="strict")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    reason = unavailable()
    if reason is not None:
        print(f"powerfs: {reason}", file=sys.stderr)
        return 2
    serve(args.backing, args.mountpoint, args.control, args.dir_sync)
    return 0


if __name__ == "__main__":
    sys.exit(main())
