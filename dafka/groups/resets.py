"""An admin's reset of a group's committed offsets (pure): ``kafka-consumer-groups
--reset-offsets`` for Dafka groups.

A group's commits are records its members sign in ``__group.NAME`` (:mod:`.records`), and
no member may commit for another. A reset is therefore not a group record but a setting of
the group topic in the cluster metadata, ``reset_offsets``: a list of ``[topic,
partition, offset, epoch, at_ms]``, set by a ``topic.alter`` that an admin signs (so it reaches a
node only through the metadata's signature checks, snapshot proofs included; the state
refuses it on any topic that is not a group's, :func:`check_reset_offsets` bounds it).

Every reader of the group (:class:`~.view.GroupView`: its members, ``dafka groups
describe``, the console, the Kafka listener's offset fetches) counts an entry as a commit
of that epoch by nobody (:data:`RESET_MEMBER`), so the same rule orders it against the
members' commits in every reader, whatever order it read things in: the highest epoch wins.
A reset's epoch is :data:`EPOCH_STEP` above the highest its admin's view held for the
partition (:func:`merge`), so it beats every commit made before it; a member that then
takes the partition commits with the reset's epoch plus one, and its commits win again.
A member holding a partition when it learns of a reset that beats its ownership seeks to
the reset offset and takes the reset's epoch plus one (:func:`reseek`), as if it had just
taken the partition: a reset applies to a live group too, not only to a stopped one. Until
its application polls again, the member fences those partitions' commits (positions read
before the reset raise :class:`~dafka.errors.CommitFailedError`, or are left out of a commit
of positions), so no position from before the reset is written over it.

A reset is a commit, and ages like one: the group topic's ``retention_ms`` deletes the
members' commits, so a reset older than that (``at_ms``, the admin's clock when it was
made) counts no more either. Without it, a reset that members had long overtaken came back
once retention deleted their commits, and an idle group re-read everything since the reset
instead of falling back to ``offset_reset`` as expired offsets do (the red team's fifth
break).

Kafka clients through ``dafka-kafka`` are not members of the native group between
commits: a Kafka consumer that keeps running commits its own position over the reset
(Kafka refuses to reset an active group for that reason); stop them first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..ids import check_topic_name, is_node_id
from .assign import PartitionKey

if TYPE_CHECKING:
    from .view import Committed

__all__ = [
    "EPOCH_STEP",
    "MAX_EPOCH",
    "MAX_RESET_ENTRIES",
    "RESET_MEMBER",
    "SETTING",
    "ResetSpec",
    "ResetTo",
    "check_reset_offsets",
    "entries_of",
    "from_config",
    "merge",
    "reseek",
    "targets",
]

SETTING = "reset_offsets"
"""The group topic's setting that holds the admin's resets."""
MAX_RESET_ENTRIES = 4096
"""Partitions one group's resets name (a signed command stays well under the metadata's
command bound, :data:`dafka.metadata.signing.MAX_COMMAND_BYTES`)."""
EPOCH_STEP = 1 << 16
"""How far above the highest epoch the admin's view held a reset's epoch goes: commits made
meanwhile by members whose views were ahead (handovers) would need this many to overtake."""
MAX_EPOCH = 1 << 62
"""A reset's highest epoch: members commit above it (up to :data:`.view.MAX_EPOCH_STEP`
more) and must stay under 2^64."""
RESET_MEMBER = ""
"""Who a reset is from in a view (no member ID is empty, and it loses a tie of epochs)."""
_MAX_OFFSET = (1 << 63) - 1


def check_reset_offsets(value: object) -> list[list[Any]]:
    """``reset_offsets`` validated: a list of ``[topic, partition, offset, epoch]``, one per
    partition, sorted; ConfigError names the first bad entry."""
    if not isinstance(value, list | tuple):
        raise ConfigError(f"bad {SETTING}: a list of [topic, partition, offset, epoch]")
    # guard: reset-offsets-entries-bounded
    if len(value) > MAX_RESET_ENTRIES:
        raise ConfigError(f"bad {SETTING}: at most {MAX_RESET_ENTRIES} partitions")
    out: dict[PartitionKey, list[Any]] = {}
    for item in value:
        if not isinstance(item, list | tuple) or len(item) != 5:
            raise ConfigError(f"bad {SETTING} entry {str(item)[:80]}")
        topic, partition, offset, epoch, at_ms = item
        if not isinstance(topic, str) or not isinstance(partition, str):
            raise ConfigError(f"bad {SETTING} entry {str(item)[:80]}")
        # guard: reset-offsets-topic-names-checked
        check_topic_name(topic)  # a name a topic could have: no control characters
        if not is_node_id(partition):
            raise ConfigError(f"bad {SETTING} partition {partition[:40]!r}: a node ID")
        if type(offset) is not int or not 0 <= offset <= _MAX_OFFSET:
            raise ConfigError(f"bad {SETTING} offset {offset!r}: an integer from 0 to 2^63-1")
        # guard: reset-offsets-epoch-leaves-room
        if type(epoch) is not int or not 1 <= epoch <= MAX_EPOCH:
            raise ConfigError(f"bad {SETTING} epoch {epoch!r}: an integer from 1 to 2^62")
        if type(at_ms) is not int or not 0 <= at_ms <= _MAX_OFFSET:
            raise ConfigError(f"bad {SETTING} time {at_ms!r}: ms since the epoch")
        if (topic, partition) in out:
            raise ConfigError(f"bad {SETTING}: {topic}/{partition} named twice")
        out[(topic, partition)] = [topic, partition, offset, epoch, at_ms]
    return [out[k] for k in sorted(out)]


def from_config(
    config: Mapping[str, Any] | None, group_topic: str, now_ms: int | None = None
) -> dict[PartitionKey, tuple[int, int]]:
    """The resets of ``group_topic`` in force in a metadata configuration: ``{(topic,
    partition): (offset, epoch)}`` (none if the setting is absent or, defensively,
    invalid). With ``now_ms`` (wall clock), those older than the group topic's
    ``retention_ms`` are left out, as its members' commits are deleted."""
    return {k: (o, e) for k, (o, e, _) in entries_of(config, group_topic, now_ms).items()}


def entries_of(
    config: Mapping[str, Any] | None, group_topic: str, now_ms: int | None = None
) -> dict[PartitionKey, tuple[int, int, int]]:
    """:func:`from_config` with each entry's time: ``{key: (offset, epoch, at_ms)}``."""
    if config is None:
        return {}
    own = (config.get("topics") or {}).get(group_topic) or {}
    value = own.get(SETTING)
    if not value:
        return {}
    try:
        entries = check_reset_offsets(value)
    except ConfigError:
        return {}
    retention = own.get("retention_ms")
    out = {}
    for t, p, o, e, at in entries:
        # guard: resets-age-out-with-group-retention
        if now_ms is not None and isinstance(retention, int) and now_ms - at > retention:
            continue  # as old as the commits the group topic's retention deletes
        out[(t, p)] = (o, e, at)
    return out


def merge(
    existing: Mapping[PartitionKey, tuple[int, int, int]],
    targets: Mapping[PartitionKey, int],
    epochs: Mapping[PartitionKey, int],
    now_ms: int,
) -> list[list[Any]]:
    """The new ``reset_offsets``: ``targets`` (partition -> offset) at :data:`EPOCH_STEP`
    above ``epochs`` (the highest the admin's view holds, resets included), made at
    ``now_ms``, and the ``existing`` resets (``{key: (offset, epoch, at_ms)}``) still in
    force (those a member's commit has not overtaken: an entry whose epoch some commit
    passed orders nothing any more, and is dropped)."""
    out: dict[PartitionKey, list[Any]] = {}
    for key, (offset, epoch, at) in existing.items():
        if key not in targets and epoch >= epochs.get(key, 0):
            out[key] = [key[0], key[1], offset, epoch, at]
    for key, offset in targets.items():
        epoch = max(epochs.get(key, 0), existing.get(key, (0, 0, 0))[1]) + EPOCH_STEP
        if epoch > MAX_EPOCH:
            raise ConfigError(f"{key[0]}/{key[1]}: its epoch has no room for another reset")
        out[key] = [key[0], key[1], offset, epoch, now_ms]
    if len(out) > MAX_RESET_ENTRIES:
        raise ConfigError(
            f"a group's resets name at most {MAX_RESET_ENTRIES} partitions, this one "
            f"{len(out)}: reset fewer at a time, once its members committed over the last"
        )
    return [out[k] for k in sorted(out)]


class ResetTo(Enum):
    EARLIEST = "earliest"
    LATEST = "latest"
    OFFSET = "offset"
    SHIFT = "shift"  # by ``value`` records (negative: back)
    DATETIME = "datetime"  # the first record at or after ``value`` ms since the epoch


@dataclass(frozen=True)
class ResetSpec:
    to: ResetTo
    value: int = 0


def targets(
    spec: ResetSpec,
    bounds: Mapping[PartitionKey, tuple[int, int]],
    committed: Mapping[PartitionKey, int],
    found: Mapping[PartitionKey, int | None] | None = None,
) -> dict[PartitionKey, int]:
    """The offset each partition of ``bounds`` ({key: (first stored offset, log end)})
    is reset to, clamped into ``first..end`` as Kafka clamps its resets. ``committed``: the
    group's current offsets (for SHIFT; a partition without one shifts from its first);
    ``found``: for DATETIME, the offset of the first record at or after the time (None:
    none yet, so the log end)."""
    out: dict[PartitionKey, int] = {}
    for key, (first, end) in bounds.items():
        if spec.to is ResetTo.EARLIEST:
            offset = first
        elif spec.to is ResetTo.LATEST:
            offset = end
        elif spec.to is ResetTo.OFFSET:
            offset = spec.value
        elif spec.to is ResetTo.SHIFT:
            offset = committed.get(key, first) + spec.value
        else:
            at = (found or {}).get(key)
            offset = end if at is None else at
        out[key] = min(max(offset, first), end)
    return out


def reseek(
    held: Mapping[PartitionKey, int], best: Callable[[PartitionKey], Committed | None]
) -> dict[PartitionKey, Committed]:
    """Of the partitions a member holds (``held``: partition -> its ownership epoch), those
    where a reset now beats its ownership (``best``: the view's committed offset of a
    partition, :meth:`~.view.GroupView.best`, whose winner is the reset): ``{key: the
    reset's Committed}``, to seek to and own at its epoch + 1. Looks at the held partitions
    only (the member asks every turn)."""
    out: dict[PartitionKey, Committed] = {}
    for key, epoch in held.items():
        c = best(key)
        # guard: member-seeks-reset-beats-ownership
        if c is not None and c.member == RESET_MEMBER and c.epoch >= epoch:
            out[key] = c
    return out
