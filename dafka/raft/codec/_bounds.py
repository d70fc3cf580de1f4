"""Bounds on what a Raft peer or client controls: terms, indexes, peer ids and URLs, sizes.

Pure functions, no zmq import. Each ``*_problem`` returns ``None`` when the value is
acceptable and otherwise one sentence saying what is wrong (the ConfigUpdate "argument
error" message, a log line, a :class:`~dafka.errors.ConfigError`).

Terms and indexes
-----------------
A log entry carries its term in 7 bytes (``specs/zmq-raft-protocol.md``), so a term above
:data:`MAX_TERM` cannot be stored: accepting one from a peer would make every later entry
unstorable. Indexes are kept in the same range (the log stores them as u64; the slack
keeps index arithmetic well inside it). The codec refuses larger values
(:mod:`dafka.raft.codec._wire`) and the core drops messages carrying them
(:func:`message_problem`), so neither reaches storage.

Peer URLs
---------
A peer URL is what our DEALERs connect to: exactly ``tcp://HOST:PORT``, HOST a DNS name,
an IPv4 address or a bracketed IPv6 address, PORT 1..65535, at most
:data:`MAX_URL_LENGTH` characters. Anything else (``Tcp://``, ``ipc://``, ``*``, a source
address ``a;b``) is refused before it can enter a configuration.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "DEFAULT_MAX_ENTRY_BYTES",
    "MAX_ENTRY_BYTES_LIMIT",
    "MAX_INDEX",
    "MAX_PEERS",
    "MAX_PEER_ID_BYTES",
    "MAX_TERM",
    "MAX_URL_LENGTH",
    "PEER_FRAME_BYTES",
    "entry_problem",
    "message_problem",
    "peer_id_problem",
    "peer_url_problem",
    "peers_problem",
]

MAX_TERM = (1 << 56) - 1
"""The largest term a log entry can hold (7 bytes)."""
MAX_INDEX = (1 << 56) - 1
"""The largest log index (and snapshot byte offset or size) a peer accepts."""
MAX_URL_LENGTH = 255
MAX_PEER_ID_BYTES = 255
MAX_PEERS = 64
"""Voters plus learners of one configuration (each is a DEALER socket on every peer)."""
DEFAULT_MAX_ENTRY_BYTES = 1 << 20
"""Default cap on the data of one RequestUpdate (one STATE log entry): 1 MiB."""
MAX_ENTRY_BYTES_LIMIT = 64 << 20
"""The largest cap a peer may be configured with."""
PEER_FRAME_BYTES = 64 * 1024
"""``ZMQ_MAXMSGSIZE`` of a peer's DEALERs: they only ever receive small peer responses."""

_HOST = r"(?:\[[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?\]|[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)"
_URL = re.compile(rf"tcp://(?P<host>{_HOST}):(?P<port>[0-9]{{1,5}})", re.ASCII)


def peer_url_problem(url: Any) -> str | None:
    """Why ``url`` is not a connectable ``tcp://HOST:PORT`` peer URL (None if it is)."""
    if not isinstance(url, str):
        return "a peer url must be a string"
    if len(url) > MAX_URL_LENGTH:
        return f"peer url has {len(url)} characters, at most {MAX_URL_LENGTH} allowed"
    match = _URL.fullmatch(url)
    if match is None:
        return f"peer url {url!r} is not tcp://HOST:PORT"
    if not 1 <= int(match["port"]) <= 65535:
        return f"peer url {url!r} has a port outside 1..65535"
    return None


def peer_id_problem(peer_id: Any) -> str | None:
    """Why ``peer_id`` is not an acceptable PEER ID (None if it is)."""
    if not isinstance(peer_id, str) or not peer_id:
        return "a peer id must be a non-empty string"
    if len(peer_id.encode("utf-8", "surrogatepass")) > MAX_PEER_ID_BYTES:
        return f"peer id {peer_id[:32]!r}... is over {MAX_PEER_ID_BYTES} bytes"
    if not peer_id.isprintable():
        return f"peer id {peer_id!r} has control characters"
    return None


def peers_problem(peers: Iterable[Any]) -> str | None:
    """Why a list of :class:`~dafka.raft.codec.Peer` cannot enter a configuration."""
    count = 0
    for peer in peers:
        count += 1
        if count > MAX_PEERS:
            return f"a configuration has at most {MAX_PEERS} peers"
        problem = peer_id_problem(getattr(peer, "id", None)) or peer_url_problem(
            getattr(peer, "url", None)
        )
        if problem is not None:
            return problem
    return None


def entry_problem(entry: Any) -> str | None:
    """Why a log entry cannot be stored (its term or index is out of range)."""
    if not 0 <= entry.term <= MAX_TERM:
        return f"entry term {entry.term} is over {MAX_TERM}"
    if not 1 <= entry.index <= MAX_INDEX:
        return f"entry index {entry.index} is outside 1..{MAX_INDEX}"
    return None


_INDEX_FIELDS = (
    "prev_index",
    "commit",
    "last_index",
    "index",
    "conflict_index",
    "offset",
    "total_size",
    "next_offset",
    "end",
)
_TERM_FIELDS = ("term", "prev_term", "last_term", "term_of_index", "conflict_term")


def message_problem(msg: Any) -> str | None:
    """Why a core message (:mod:`dafka.raft.core._messages`) carries a term or an index this
    peer cannot hold; checked by the core before anything else."""
    for name in _TERM_FIELDS:
        value = getattr(msg, name, None)
        if value is not None and not 0 <= value <= MAX_TERM:
            return f"{name} {value} is outside 0..{MAX_TERM}"
    for name in _INDEX_FIELDS:
        value = getattr(msg, name, None)
        if value is not None and not 0 <= value <= MAX_INDEX:
            return f"{name} {value} is outside 0..{MAX_INDEX}"
    for entry in getattr(msg, "entries", ()):
        problem = entry_problem(entry)
        if problem is not None:
            return problem
    return None
