"""The fields of a metadata snapshot, checked before anything in it is believed.

:meth:`.state.MetadataStateMachine.snapshot` writes a MessagePack map: the
:meth:`~.state.MetadataStateMachine.view` (``format``, ``revision``, ``topics``, ``stores``,
``cluster``, ``deleted``, ``admins``, ``leases``, ``numbering``, ``changes``, ``refused``) plus ``seen`` (recent reqids),
``newest``, ``replays`` (recent signed-command digests), ``modified`` (what changed at which
revision, for the last :data:`~.state.REPLAY_WINDOW` revisions) and ``proofs``
(:mod:`.proofs`). :func:`state_fields` checks the types and bounds of every field and
normalises the values as the state machine holds them; whether the items are true is
:func:`.proofs.verify`'s business.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, WireError
from ..ids import check_topic
from ..wire.packing import unpack as _unpack
from .leases import MAX_LEASES, MAX_NUMBERED, check_broker, check_endpoint, check_resource
from .proofs import Proofs, verify
from .settings import (
    CLUSTER_DEFAULTS,
    MAX_ADMINS,
    check_cluster_settings,
    check_settings,
    node_id,
)
from .signing import check_public_key

if TYPE_CHECKING:
    from .state import MetadataStateMachine

__all__ = ["signer_of", "state_fields", "verified_state"]

HISTORY_TEXT = 300
"""Characters kept of each text in ``changes`` / ``refused`` (shown, never acted on)."""


def signer_of(envelope: bytes) -> str:
    """The key (hex) of a signed envelope this replica holds (it verified it)."""
    return bytes(_unpack(envelope)["by"]).hex()


def state_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The fields of a snapshot (or a view), types checked; ConfigError / WireError (or
    ValueError, TypeError) on the first that is not what :meth:`snapshot` writes."""
    # the rules are the state machine's own (imported here: it imports this module)
    from .state import CHANGES_KEPT

    if not isinstance(obj.get("topics"), dict):
        raise WireError("not a metadata snapshot")

    def listed(name: str, width: int) -> list[list[Any]]:
        value = obj.get(name, [])
        if not isinstance(value, list) or not all(
            isinstance(v, list) and len(v) == width for v in value
        ):
            raise WireError(f"metadata snapshot: bad {name}")
        return value

    def history(name: str) -> list[dict[str, Any]]:
        value = obj.get(name, [])
        if not isinstance(value, list) or not all(
            isinstance(v, dict)
            and all(isinstance(k, str) and isinstance(x, str | int | None) for k, x in v.items())
            for v in value
        ):
            raise WireError(f"metadata snapshot: bad {name}")
        return [
            {k: x[:HISTORY_TEXT] if isinstance(x, str) else x for k, x in v.items()}
            for v in value[-CHANGES_KEPT:]
        ]

    def revisions(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise WireError(f"metadata snapshot: bad revision {value!r}")
        return value

    topics = {check_topic(k): check_settings(v) for k, v in obj["topics"].items()}
    admins = obj.get("admins", [])
    if not isinstance(admins, list) or len(admins) > MAX_ADMINS:
        raise WireError("metadata snapshot: bad admins")
    revision = revisions(obj.get("revision", 0))
    modified = [(str(k), revisions(r)) for k, r in listed("modified", 2)]
    if any(r > revision for _, r in modified):
        raise WireError("metadata snapshot: a change after its revision")
    return {
        "topics": topics,
        "leases": _leases(obj.get("leases", {})),
        "numbering": _numbering(obj.get("numbering", {}), topics),
        "stores": sorted({node_id(v, "store") for v in obj.get("stores", [])}),
        "cluster": {**CLUSTER_DEFAULTS, **check_cluster_settings(obj.get("cluster", {}))},
        "deleted": {str(k): revisions(v) for k, v in obj.get("deleted", {}).items()},
        "revision": revision,
        "seen": OrderedDict((bytes(r), int(t)) for r, t in listed("seen", 2)),
        "newest": int(obj.get("newest", 0)),
        "admins": sorted({check_public_key(k) for k in admins}),
        "replays": OrderedDict((bytes(d), int(b)) for d, b in listed("replays", 2)),
        "changes": history("changes"),
        "refused": history("refused"),
        "modified": modified,
    }


def _leases(value: object) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict) or len(value) > MAX_LEASES:
        raise WireError("metadata snapshot: bad leases")
    out: dict[str, dict[str, Any]] = {}
    for resource, lease in value.items():
        check_resource(resource)
        if not isinstance(lease, dict):
            raise WireError("metadata snapshot: bad lease")
        holder, epoch, beat = lease.get("holder"), lease.get("epoch"), lease.get("beat")
        for number in (epoch, beat):
            if isinstance(number, bool) or not isinstance(number, int) or number < 0:
                raise WireError(f"metadata snapshot: bad lease {resource!r}")
        if holder is None:
            broker = endpoint = None
        else:
            holder = check_public_key(holder)
            broker = check_broker(lease.get("broker"))
            endpoint = check_endpoint(lease.get("endpoint"))
        out[resource] = {
            "holder": holder,
            "epoch": epoch,
            "broker": broker,
            "endpoint": endpoint,
            "beat": beat,
        }
    return out


def _numbering(value: object, topics: dict[str, Any]) -> dict[str, list[list[Any]]]:
    if not isinstance(value, dict):
        raise WireError("metadata snapshot: bad numbering")
    out: dict[str, list[list[Any]]] = {}
    for topic, numbered in value.items():
        if topic not in topics or not isinstance(numbered, list) or len(numbered) > MAX_NUMBERED:
            raise WireError(f"metadata snapshot: bad numbering of {str(topic)[:80]!r}")
        rows = []
        for row in numbered:
            if not isinstance(row, list) or len(row) != 2:
                raise WireError("metadata snapshot: bad numbering")
            number = row[1]
            if isinstance(number, bool) or not isinstance(number, int) or number < 0:
                raise WireError("metadata snapshot: bad numbering")
            rows.append([node_id(row[0], "partition"), number])
        out[topic] = rows
    return out


def verified_state(sm: MetadataStateMachine, data: bytes) -> dict[str, Any]:
    """The fields of snapshot ``data`` once verified for replica ``sm`` (see
    :meth:`~.state.MetadataStateMachine.check_snapshot`), with ``proofs`` and ``modified``
    as the state machine holds them; ConfigError / WireError (or ValueError, TypeError,
    KeyError from a malformed field) on the first thing refused."""
    from .state import REPLAY_WINDOW, SNAPSHOT_FORMAT

    readable = (3, SNAPSHOT_FORMAT)  # 3: before leases, which it has none of
    obj = _unpack(data)
    if not isinstance(obj, dict) or not isinstance(obj.get("topics"), dict):
        raise WireError("not a metadata snapshot")
    version = obj.get("format", 0)
    if not isinstance(version, int) or version not in readable:
        raise WireError(
            f"metadata snapshot format {version!r}: this replica reads {readable} "
            "(older ones carry no proofs: docs/metadata.md, 'Upgrading', says what to do)"
        )
    state = state_fields(obj)
    proofs = Proofs.decode(obj.get("proofs"))
    # guard: metadata-snapshot-never-older-replica
    if state["revision"] < sm.revision:
        raise ConfigError(f"revision {state['revision']} is older than ours {sm.revision}")
    held = sm.proofs.root
    # guard: metadata-snapshot-root-replica-own
    if held and proofs.root != held:
        raise ConfigError(f"root admins {proofs.root} are not this replica's {held}")
    # guard: metadata-snapshot-root-within-configured
    if sm.anchors and not set(proofs.root) <= set(sm.anchors):
        raise ConfigError(
            f"root admins {proofs.root} are not among the configured bootstrap admins {sm.anchors}"
        )
    # guard: metadata-snapshot-items-verified-against
    modified = verify(
        state,
        proofs,
        cluster=sm.cluster_name,
        window=REPLAY_WINDOW,
        decode=lambda cmd: sm._decode(cmd, count=False),
        check_topic_settings=check_settings,
        check_cluster_settings=check_cluster_settings,
        cluster_defaults=CLUSTER_DEFAULTS,
        known=(p.envelope for p in sm.proofs.envelopes()),
    )
    horizon = state["revision"] - REPLAY_WINDOW
    for name, revision in state["modified"]:
        modified[name] = max(modified.get(name, 0), revision)
    state["modified"] = OrderedDict(
        sorted(((k, r) for k, r in modified.items() if r > horizon), key=lambda kv: kv[1])
    )
    state["proofs"] = proofs
    return state
