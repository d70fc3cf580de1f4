"""The exactly-once sink's state and decisions, with no Spark and no sockets.

A streaming query's sink keeps a directory (``<checkpointLocation>/dafka-sink`` or the
``sinkStateDir`` option) holding:

- ``secret``: 32 random bytes made once per query. Sink task ``p`` (the Spark partition
  id) writes as the Ed25519 identity :func:`task_identity` ``(secret, p)``, so a
  restarted query writes the same Dafka partitions as before, and the output topic has
  at most one partition per Spark partition id, whatever the Python workers or restarts.
- ``task-<p>/``: task ``p``'s lock (two live attempts never write as one identity), its
  producer's state directory (key, offset journals) and ``batch.json``, the
  :class:`BatchRecord` of the last micro-batch it began: the batch id, where each topic
  of that batch began (the producer's reserved next offsets at that moment) and whether
  every row of it was acknowledged.

:func:`decide` turns that record and the batch id Spark asks for into a :class:`Plan`;
:func:`remainder` drops the rows a killed attempt of the same batch already stored.
See ``docs/spark.md`` for why this is exactly once and what it costs.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from ..errors import ConfigError
from ..security.identity import Identity
from ..security.private_dirs import make_private_dirs
from ..storage.state_dir import write_atomic
from .options import WriteOptions

__all__ = [
    "BATCH_FILE",
    "SECRET_BYTES",
    "BatchRecord",
    "Plan",
    "PlanKind",
    "Row",
    "RowId",
    "decide",
    "load_or_create_secret",
    "read_record",
    "remainder",
    "sink_root",
    "task_identity",
    "write_record",
]

STATE_SUBDIR = "dafka-sink"
"""The exactly-once sink's directory inside the checkpoint."""
SECRET_BYTES = 32
SECRET_FILE = "secret"
BATCH_FILE = "batch.json"
_PERSON = b"dafka-spark-sink"  # BLAKE2b personalization: 16 bytes

Row = tuple[str, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int | None]
"""``(topic, key, value, headers, timestamp_ms)``: a row the sink writes (value None: a
tombstone; timestamp None: the seal time)."""
RowId = tuple[str, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]
"""What a row is to the exactly-once check: ``Row`` without its time (a stored record's
time is its batch's seal time when the row gave none)."""


def sink_root(opts: WriteOptions) -> Path:
    """The exactly-once sink's state directory (absolute), checked on the driver."""
    if opts.state_dir is not None:
        return Path(opts.state_dir).expanduser().resolve()
    if opts.checkpoint is None:
        raise ConfigError(
            "the exactly-once dafka sink keeps its state beside the query's checkpoint: "
            "give the checkpointLocation option, or sinkStateDir, or "
            "deliveryGuarantee=atLeastOnce"
        )
    url = urlparse(opts.checkpoint)
    if url.scheme not in ("", "file"):
        raise ConfigError(
            f"the exactly-once dafka sink needs a local directory, and checkpointLocation "
            f"{opts.checkpoint!r} is not one: give sinkStateDir (a directory every executor "
            "shares) or deliveryGuarantee=atLeastOnce"
        )
    path = Path(url.path if url.scheme == "file" else opts.checkpoint).expanduser()
    if not path.is_absolute():
        raise ConfigError(
            f"the exactly-once dafka sink needs an absolute checkpointLocation, not "
            f"{opts.checkpoint!r} (or give sinkStateDir)"
        )
    return path / STATE_SUBDIR


def task_identity(secret: bytes, partition_id: int) -> Identity:
    """The Ed25519 identity sink task ``partition_id`` writes as: keyed BLAKE2b of the id.

    Deterministic (a restart writes the same partitions), distinct per partition id, and
    secret: without ``secret`` nobody can derive the key and sign as the sink.
    """
    if len(secret) != SECRET_BYTES:
        raise ConfigError(f"the dafka sink's secret must be {SECRET_BYTES} bytes")
    if partition_id < 0:
        raise ConfigError(f"a Spark partition id is never negative, not {partition_id}")
    seed = hashlib.blake2b(
        partition_id.to_bytes(8, "big"), key=secret, person=_PERSON, digest_size=32
    ).digest()
    return Identity.from_seed(seed)


def load_or_create_secret(root: Path) -> bytes:
    """The query's sink secret in ``root``, made (0600, fsynced) on first use.

    Two processes making it at once agree: the file is created exclusively and the loser
    reads the winner's. A damaged file raises :class:`ConfigError`, never a new secret
    (that would be new partitions).
    """
    path = root / SECRET_FILE
    try:
        make_private_dirs(root)
        if not path.exists():
            tmp = root / f".{SECRET_FILE}.{os.getpid()}.tmp"
            write_atomic(tmp, os.urandom(SECRET_BYTES).hex().encode() + b"\n")
            try:
                os.link(tmp, path)  # fails if another process made it first
            except FileExistsError:
                pass
            finally:
                tmp.unlink(missing_ok=True)
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"the dafka sink's state directory {root}: {exc}") from exc
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        secret = b""
    if len(secret) != SECRET_BYTES:
        raise ConfigError(
            f"{path} is damaged (not {SECRET_BYTES} hex bytes); restore it: a new secret "
            "would write to new partitions"
        )
    return secret


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """The last micro-batch one sink task began: ``batch``, each topic's first offset in it
    (topics absent began at 0), and whether all its rows were acknowledged."""

    batch: int
    starts: Mapping[str, int] = field(default_factory=dict)
    done: bool = False

    def to_json(self) -> bytes:
        return json.dumps(
            {"batch": self.batch, "starts": dict(sorted(self.starts.items())), "done": self.done}
        ).encode()

    @classmethod
    def from_json(cls, data: bytes, where: object = "batch record") -> BatchRecord:
        try:
            obj = json.loads(data)
            batch, starts, done = obj["batch"], obj["starts"], obj["done"]
            ok = (
                type(batch) is int
                and type(done) is bool
                and isinstance(starts, dict)
                and all(type(k) is str and type(v) is int and v >= 0 for k, v in starts.items())
            )
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            raise ConfigError(f"{where} is damaged; the sink cannot tell what it already wrote")
        return cls(batch, dict(starts), done)


def read_record(task_dir: Path) -> BatchRecord | None:
    path = task_dir / BATCH_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return BatchRecord.from_json(data, path)


def write_record(task_dir: Path, record: BatchRecord) -> None:
    """Replace ``batch.json`` atomically and durably (fsynced before it returns)."""
    path = task_dir / BATCH_FILE
    try:
        write_atomic(path, record.to_json())
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from exc


class PlanKind(enum.Enum):
    NEW = "new"
    """A batch this task never began: record where it begins, then write every row."""
    RESUME = "resume"
    """An attempt of this batch began and did not finish: write what it did not store."""
    SKIP = "skip"
    """This batch was written completely (Spark replays it because its commit was lost)."""


@dataclass(frozen=True, slots=True)
class Plan:
    kind: PlanKind
    starts: Mapping[str, int]
    """Where each topic's rows of this batch begin (absent: 0)."""


def decide(record: BatchRecord | None, batch: int, reserved: Mapping[str, int]) -> Plan:
    """What task ``p`` does for micro-batch ``batch``, given its ``record`` and the
    producer's ``reserved`` next offsets (nothing of this task lies at or past them).

    Spark begins batch ``b`` only once every batch before it is committed, and replays
    only the last batch, so a record of a later batch, or an unfinished earlier one that
    Spark has moved past, cannot happen with the same checkpoint: it is refused rather
    than guessed (the state directory belongs to another query or checkpoint).
    """
    if batch < 0:
        raise ConfigError(f"Spark gave the sink batch id {batch}")
    if record is None or (record.batch < batch and record.done):
        return Plan(PlanKind.NEW, dict(reserved))
    if record.batch == batch:
        return Plan(PlanKind.SKIP if record.done else PlanKind.RESUME, dict(record.starts))
    if record.batch < batch:
        # an attempt of an earlier batch did not finish, yet Spark committed that batch:
        # its task had no rows for this partition on the replay. What it stored stays.
        return Plan(PlanKind.NEW, dict(reserved))
    raise ConfigError(
        f"the dafka sink's state has batch {record.batch} but Spark asks for batch {batch}: "
        "the sink state directory belongs to another checkpoint (give each query its own "
        "checkpointLocation or sinkStateDir)"
    )


def remainder(rows: Iterable[Row], stored: Counter[RowId]) -> Iterator[Row]:
    """``rows`` without those ``stored`` already (as a multiset of :data:`RowId`: a row
    stored twice is dropped twice). Order is kept. ``stored`` is consumed."""
    for row in rows:
        same = row[:4]
        if stored and stored[same] > 0:
            stored[same] -= 1
            continue
        yield row
