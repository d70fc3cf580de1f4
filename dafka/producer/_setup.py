"""What a producer opens before it starts: identity, journals, log, wire profile, trust.

:func:`open_state` gives a producer its node ID (from its Ed25519 key under ``signed``,
kept in its ``state_dir`` when it has one, else new each run) and, with a state
directory, its offset journal (the next offsets, reserved before anything is
published), its acked journal (how far each topic is durable) and, in durable mode, the
records its WAL holds that were never acknowledged (published again after a restart).
:func:`wire_profile` and :func:`trusted_store_ids` turn the checked
:class:`~dafka.config.ProducerConfig` into the profile and the stores whose ACKs count.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ..config import ProducerConfig
from ..ids import new_node_id
from ..security.identity import Identity
from ..storage.state_dir import OffsetJournal, StateDir
from ..wire.profiles import RFC46, Profile, SignedProfile
from . import ACKED_JOURNAL  # how far each topic is durable (the Kafka listener reads it)
from ._wal import ProducerLog

__all__ = [
    "ACKED_JOURNAL",
    "WAL_FILE",
    "OpenedState",
    "open_state",
    "trusted_store_ids",
    "wire_profile",
]

log = logging.getLogger(__name__)

WAL_FILE = "producer.wal"
"""The durable producer's log of what it published and is not yet acknowledged."""

_trust_any_warned = False
"""Whether this process has warned of a producer trusting any store (then: info)."""


@dataclass(frozen=True, slots=True)
class OpenedState:
    """A producer's identity and what its state directory holds (nothing without one)."""

    node_id: str
    identity: Identity | None
    state: StateDir | None = None
    journal: OffsetJournal | None = None
    acked_journal: OffsetJournal | None = None
    wal: ProducerLog | None = None
    next_offsets: dict[str, int] = field(default_factory=dict)
    acked_offsets: dict[str, int] = field(default_factory=dict)
    logged: list[tuple[str, int, int, bytes]] = field(default_factory=list)
    journal_in_doubt: bool = False
    run: int | None = None
    """This start's run (state directory only), signed into its gap statements."""
    acked_in_doubt: bool = False
    """The acked journal's last record did not read back and was not clearly torn: its
    bounds may be below what was acknowledged."""
    """The offset journal's last record did not read back and was not clearly torn: its
    offsets may be below what was published (the core asks the stores first)."""


def open_state(config: ProducerConfig, durable: bool) -> OpenedState:
    """Open the producer's state directory (if any) and load what it keeps; on an error,
    close what was opened and raise."""
    signed = config.profile == "signed"
    if config.state_dir is None:
        if signed:
            identity = Identity.generate()
            return OpenedState(identity.node_id, identity)
        return OpenedState(new_node_id(), None)
    state = StateDir(config.state_dir)
    wal: ProducerLog | None = None
    try:
        state.pin_profile(config.profile)
        identity_or_none: Identity | None = None
        if signed:
            identity_or_none = state.identity()
            node_id = identity_or_none.node_id
        else:
            node_id = state.node_id()
        # guard: each-start-producer-state-directory
        run = state.next_run()
        journal = state.offset_journal()
        next_offsets = journal.load()
        acked_journal = state.offset_journal(ACKED_JOURNAL)
        acked_offsets = acked_journal.load()
        logged: list[tuple[str, int, int, bytes]] = []
        if durable:
            wal = ProducerLog(state.path / WAL_FILE)
            for b in wal.pending(acked_offsets):
                logged.append((b.topic, b.first, b.count, b.content))
            for topic, end in wal.ends().items():
                next_offsets[topic] = max(next_offsets.get(topic, 0), end)
    except BaseException:
        if wal is not None:
            wal.close()
        state.close()
        raise
    # guard: restarted-producer-journal-doubt-reaches
    return OpenedState(
        node_id,
        identity_or_none,
        state,
        journal,
        acked_journal,
        wal,
        next_offsets,
        acked_offsets,
        logged,
        journal.in_doubt,
        run,
        acked_journal.in_doubt,
    )


def wire_profile(config: ProducerConfig, identity: Identity | None) -> Profile:
    """The profile the producer speaks: signed batches with its key, or rfc46."""
    if config.profile != "signed":
        return RFC46
    return SignedProfile(
        identity,
        max_batch_records=config.max_batch_records,
        max_batch_bytes=config.max_batch_bytes,
        batch_format=config.batch_format,
    )


def trusted_store_ids(config: ProducerConfig, node_id: str) -> tuple[str, ...] | None:
    """The stores whose ACKs count (None: any store whose signature verifies)."""
    global _trust_any_warned
    trusted: tuple[str, ...] | None = config.trusted_stores or None
    if config.trusts_any_store:
        trusted = None
        # guard: process-warns-producers-trust-store
        if config.trust_any_store is None and not _trust_any_warned:
            # once per process: a Spark executor starts a producer per task
            _trust_any_warned = True
            log.warning(
                "producer.trust_any_store id=%s: no trusted stores configured, so an "
                "ACK from any store whose signature verifies counts (fine for a local "
                "platform; pin stores with trusted_stores=[node IDs or public keys]); "
                "said once per process",
                node_id,
            )
        else:
            log.info("producer.trust_any_store id=%s", node_id)
    return trusted
