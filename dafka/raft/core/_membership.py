"""Cluster membership rules: validating a ConfigUpdate against the current configuration.

CONFIG entry data is encoded by :mod:`dafka.raft.codec._frames` (``encode_config`` /
``decode_config``); this module only decides whether a change is acceptable, with the
spec's ConfigUpdate "argument error" cases: an empty peer list, duplicate ids, two ids
sharing a URL, or an id (or URL) known under a different URL (or id) than before; and
ours: a peer id or URL that :mod:`dafka.raft.codec._bounds` refuses (a URL is exactly
``tcp://HOST:PORT``, which every peer can connect to), or too many peers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..codec import ClusterConfig, Peer, peers_problem
from ._extensions import PLAIN

__all__ = ["all_peers", "validate_change"]


def all_peers(config: ClusterConfig) -> tuple[Peer, ...]:
    """Every peer the config mentions (new voters, old voters, learners), each once."""
    seen: dict[str, Peer] = {}
    for peer in (*config.peers, *(config.old or ()), *config.learners):
        seen.setdefault(peer.id, peer)
    return tuple(seen.values())


def _check_unique(peers: Iterable[Peer]) -> str | None:
    ids: set[str] = set()
    urls: dict[str, str] = {}
    for peer in peers:
        if (
            not isinstance(peer, Peer)
            or not isinstance(peer.id, str)
            or not isinstance(peer.url, str)
        ):
            return "peers must be [peer id, peer url] pairs of strings"
        if not peer.id or not peer.url:
            return "peer ids and urls must not be empty"
        if peer.id in ids:
            return f"duplicate peer id {peer.id!r}"
        if peer.url in urls:
            return f"peers {urls[peer.url]!r} and {peer.id!r} share the url {peer.url!r}"
        ids.add(peer.id)
        urls[peer.url] = peer.id
    return None


def validate_change(
    current: ClusterConfig,
    peers: Sequence[Peer],
    learners: Sequence[Peer] = (),
    plain: frozenset[str] = frozenset(),
) -> str | None:
    """``None`` if ``peers`` (+ ``learners``) may replace ``current``, else why not.
    ``plain``: peers not known to speak our extensions (learners are one)."""
    if not peers:
        return "the new configuration has no peers"
    plain_members = plain & {p.id for p in (*current.peers, *peers, *learners)}
    if learners and plain_members:
        return f"learners are a Dafka extension: {', '.join(sorted(plain_members))}: {PLAIN}"
    # guard: raft-membership-checks-peer-ids
    problem = _check_unique((*peers, *learners)) or peers_problem((*peers, *learners))
    if problem:
        return problem
    known = {p.id: p.url for p in all_peers(current)}
    known_urls = {url: peer_id for peer_id, url in known.items()}
    for peer in (*peers, *learners):
        url = known.get(peer.id)
        if url is not None and url != peer.url:
            return f"peer {peer.id!r} has the url {url!r}, not {peer.url!r}"
        owner = known_urls.get(peer.url)
        if owner is not None and owner != peer.id:
            return f"the url {peer.url!r} belongs to peer {owner!r}"
    return None
