"""MetadataClient's own logic, without towers: a change waits for a new group's admins."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dafka.metadata.client import MetadataClient


def _client(configs: Iterator[dict[str, Any]], timeout: float) -> MetadataClient:
    client = MetadataClient(raft_urls=["tcp://127.0.0.1:9"], timeout=timeout)
    client.config = lambda: next(configs)  # type: ignore[method-assign]  # the towers' answers
    return client


def test_a_change_waits_until_a_new_group_lists_its_admins() -> None:
    answers = iter([{"revision": 1, "admins": []}] * 3 + [{"revision": 2, "admins": ["ab"]}])
    client = _client(answers, timeout=30)
    try:
        settled = client._after_bootstrap({"revision": 0, "admins": []})
    finally:
        client.close()
    assert settled == {"revision": 2, "admins": ["ab"]}  # signed against the settled revision


def test_without_admins_for_its_whole_timeout_it_goes_ahead_to_be_refused() -> None:
    client = _client(iter(lambda: {"revision": 1, "admins": []}, None), timeout=0.3)
    try:
        assert client._after_bootstrap({"revision": 0, "admins": []})["admins"] == []
    finally:
        client.close()
