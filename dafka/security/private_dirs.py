"""Directories for keys and data, made private whatever the process's umask.

``Path.mkdir(mode=0o700, parents=True)`` gives the 0700 mode only to the last
component: the parents it makes get the default mode, ``0o777`` less the umask, so
under ``umask 000`` the ``.dafka/`` that holds ``dafka-local``'s admin key was made
0777. :func:`make_private_dirs` makes every component it creates 0700 and sets the
mode explicitly afterwards (the umask may also take bits the owner needs). A
directory that already exists is left as it is: it is the user's. The parent of each
directory made is fsynced, so the new name survives a power cut.
"""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_DIR_MODE = 0o700


def make_private_dirs(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` and its missing parents, each new one mode 0700; return ``path``.

    Raises :class:`OSError` as ``mkdir`` does (not a directory, no permission). Two
    processes creating the same directories at once both succeed.
    """
    target = Path(path)
    missing: list[Path] = []
    p = target
    while not p.is_dir():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for component in reversed(missing):
        try:
            # guard: key-data-directories-made-0700
            os.mkdir(component, PRIVATE_DIR_MODE)
        except FileExistsError:
            if not component.is_dir():
                raise
            continue  # made at the same moment by another process: its own mode stands
        # guard: key-data-directories-made-0700-2
        os.chmod(component, PRIVATE_DIR_MODE)
        fsync_dir(component.parent)  # the new name survives a power cut
    return target


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """fsync the directory ``path``: the names created or renamed in it survive a power cut
    (fsyncing a file makes its data durable, not its directory entry). The one helper for
    it (state directories, data directories, key files, the Raft files)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
