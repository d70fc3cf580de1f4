"""Walk an LMDB environment's B-trees in a child process before the store maps it.

LMDB trusts its pages: a zeroed leaf page makes it abort on an assertion
(``mdb.c: Assertion 'IS_LEAF(mp)' failed``), a node pointer past the page a SIGBUS, and
either kills the process that met it with no line of ours (a red-team pass, at every
start). :func:`probe_environment` lets a child meet them: it opens the environment
read-only and walks every key of every database (values are not read: the digests and the
scrub check those, ``dafka.storage.integrity``), so damage there becomes one clear
:class:`StorageDamagedError` and a non-zero exit of the store, never a signal. A loop in
the tree is bounded by the time allowed (a minute plus a second per 50 MB).
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

from ..errors import StorageDamagedError
from .integrity import RECOVER_HINT

__all__ = ["probe_environment"]

log = logging.getLogger(__name__)

_WALK = """
import sys, lmdb
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=16, subdir=True)
with env.begin(buffers=True) as txn:
    names = [bytes(k) for k in txn.cursor().iternext(keys=True, values=False)]
    for name in names:
        try:
            db = env.open_db(name, txn=txn, create=False)
        except lmdb.Error:
            continue  # a key of the main database that names no database
        for _ in txn.cursor(db=db).iternext(keys=True, values=False):
            pass
print("walked")
"""

_BYTES_PER_SECOND = 50 * 1024 * 1024


def probe_environment(directory: Path) -> None:
    """Raise :class:`StorageDamagedError` (one line, with how to recover) if walking the
    environment in ``directory`` kills, fails or hangs a child process; nothing for an
    absent or empty ``data.mdb`` (a new store)."""
    path = directory / "data.mdb"
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return
    timeout = 60.0 + size / _BYTES_PER_SECOND
    try:
        done = subprocess.run(
            [sys.executable, "-c", _WALK, str(directory)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise StorageDamagedError(
            f"{path} is damaged: walking its B-trees did not end within {timeout:.0f} s; "
            f"{RECOVER_HINT}"
        ) from None
    if done.returncode == 0 and done.stdout.strip() == "walked":
        return
    said = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
    how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
    raise StorageDamagedError(
        f"{path} is damaged: walking its B-trees failed ({how}: {said}); {RECOVER_HINT}"
    )
