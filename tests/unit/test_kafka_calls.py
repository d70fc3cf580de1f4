"""Kafka's client calls, their pure parts (issue 34 point 10): the time search over stored
batches and what a hostile store may answer it, the checks of what callers give, and the
pause / assign filter of delivered runs. No sockets: a fake query client and plain runs."""

from __future__ import annotations

import pytest

from dafka.api.cluster import _batch_at, check_times
from dafka.api.times import first_at_or_after
from dafka.consumer._control import ConsumerControl, parse_assignment
from dafka.consumer._shared import ConsumerShared
from dafka.core.effects import RecordBatch
from dafka.errors import ConfigError, ProfileError, ProtocolError
from dafka.query import protocol as qp
from dafka.query.protocol import pack_batches
from dafka.wire.signed_rich import MAX_RAW_BYTES
from tests.signing import P, blob

T0 = 1_700_000_000_000
SIZE = 10  # records per batch
STAMPS = [T0 + 10 * i for i in range(8)]  # batch i holds offsets 10*i .. 10*i+9


class FakeClient:
    """A store's READ of one batch: the batch holding the offset asked (``lie``: a store
    answering with another genuine batch, ``shift`` batches later)."""

    endpoint = "tcp://fake:1"

    def __init__(self, lie: int = 0) -> None:
        self.lie = lie
        self.reads: list[int] = []

    def read(self, topic: str, partition: str, offset: int, *_: object) -> qp.ReadReply:
        self.reads.append(offset)
        i = min(offset // SIZE + self.lie, len(STAMPS) - 1)
        data = blob(i * SIZE, SIZE, topic="t", timestamp_ms=STAMPS[i])
        first, lasts, ends, raw = pack_batches([(i * SIZE, i * SIZE + SIZE - 1, data)])
        head = len(STAMPS) * SIZE - 1
        return qp.ReadReply(1, topic, partition, 0, head, first, lasts, ends, raw, "signed")


def search(client: FakeClient, ts: int) -> int | None:
    batch_at = _batch_at(client, ("t", P), MAX_RAW_BYTES)  # type: ignore[arg-type]
    return first_at_or_after(batch_at, 0, len(STAMPS) * SIZE - 1, ts)


def test_the_time_search_finds_the_first_batch_stamped_at_or_after() -> None:
    assert search(FakeClient(), 0) == 0
    assert search(FakeClient(), STAMPS[3]) == 30
    assert search(FakeClient(), STAMPS[3] + 1) == 40
    assert search(FakeClient(), STAMPS[-1]) == 70
    assert search(FakeClient(), STAMPS[-1] + 1) is None
    client = FakeClient()
    search(client, STAMPS[5])
    assert len(client.reads) <= 8  # a binary search: log2(80 offsets) READs, not 80


def test_a_store_answering_another_batch_than_the_one_asked_is_refused() -> None:
    """Attack: a store answers each READ with a genuine, validly signed batch, but a later
    one than the batch holding the offset asked, to steer the search past the answer."""
    with pytest.raises(ProtocolError, match="answered a READ"):
        search(FakeClient(lie=2), STAMPS[1])


def test_times_asked_are_checked() -> None:
    assert check_times({("t", P): 5}) == {("t", P): 5}
    for bad in (
        {("t", "p0"): 5},
        {("t", P): -1},
        {("t", P): True},
        {("", P): 5},
        {("t",): 5},
        {("t", P): 2**64},
    ):
        with pytest.raises(ConfigError):
            check_times(bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        check_times({("t", f"{i:032X}"): 0 for i in range(10_001)})


def test_assignments_are_checked() -> None:
    assert parse_assignment([("t", P), ("u", P, 7)]) == {("t", P): None, ("u", P): 7}
    for bad in ([("t", "x")], [("t", P, -1)], [("t", P, 1.5)], [("t",)], ["t"]):
        with pytest.raises(ConfigError):
            parse_assignment(bad)  # type: ignore[arg-type]


Q = "AB" * 16


class Ctl(ConsumerControl):
    """The filter alone: the consumer's lock, no IO thread."""

    def __init__(self) -> None:
        self._shared = ConsumerShared()


def run(partition: str, offset: int, n: int = 3) -> RecordBatch:
    return RecordBatch("t", partition, offset, [b"v"] * n, None, None)


def test_a_paused_partition_is_held_back_and_its_first_missed_offset_noted() -> None:
    c = Ctl()
    c._shared.paused = {("t", P): None}
    kept = c._shared.keep([run(P, 10), run(Q, 0), run(P, 13)])
    assert [(r.partition, r.offset) for r in kept] == [(Q, 0)]
    assert c._shared.paused == {("t", P): 10}  # resume seeks back to the first record it missed
    c._shared.reseek_paused("t", P)
    assert c._shared.paused == {("t", P): None}  # a seek while paused: resume where it put it


def test_runs_of_partitions_not_assigned_are_dropped() -> None:
    c = Ctl()
    c._shared.manual = {("t", Q)}
    assert [r.partition for r in c._shared.keep([run(P, 0), run(Q, 0)])] == [Q]


def test_key_rule_is_kcats_k_and_z() -> None:
    from dafka.cli.producer_keys import KeyRule, key_rule

    rule = KeyRule(b"=", b"fixed", True)
    assert rule.split(b"own=a") == (b"a", b"own")  # a line's own key wins over -k
    assert rule.split(b"b") == (b"b", b"fixed")
    assert rule.split(b"=c") == (b"c", None)  # -Z: an empty key is no key
    assert rule.split(b"") == (b"", b"fixed")  # a value is never null: empty stays empty
    assert KeyRule(None, b"", True).split(b"x") == (b"x", None)
    assert KeyRule(None, b"", False).split(b"x") == (b"x", b"")
    assert key_rule(None, None, False, "signed") is None  # the feed's fast path
    with pytest.raises(ProfileError):
        key_rule(None, "k", False, "rfc46")


def test_kcat_json_names_and_query_specs() -> None:
    import json

    from dafka.cli.kcat import kcat_json, parse_topic_time
    from dafka.core.effects import ConsumedRecord

    row = json.loads(kcat_json(ConsumedRecord("t", P, 3, b"v", b"\xff", 1.5)))
    assert row == {
        "topic": "t",
        "partition": P,
        "offset": 3,
        "tstype": "create",
        "ts": 1500,
        "broker": -1,
        "key": None,
        "key_base64": "/w==",
        "payload": "v",
    }
    row = json.loads(kcat_json(ConsumedRecord("t", P, 0, b"v")))
    assert (row["tstype"], row["ts"], row["key"]) == ("unknown", -1, None)
    assert parse_topic_time(f"a:b:{P.lower()}:17") == ("a:b", P, 17)
    for bad in ("t:17", f"t:{P}:", f"t:{P}:-1", f":{P}:1"):
        with pytest.raises(ConfigError):
            parse_topic_time(bad)
