"""The console's pure parts: views of a cluster, shown bytes, user input, metrics, binds."""

from __future__ import annotations

import pytest

from dafka.cli.holdings import StoreView
from dafka.console.changes import topic_form
from dafka.console.checks import host_allowed, parse_host, same_origin
from dafka.console.metrics import OTHER, cluster_families, group_lag
from dafka.console.model import build_snapshot
from dafka.console.render import (
    MAX_OFFSET,
    MAX_PAGE,
    MAX_SHOWN_BYTES,
    Format,
    page_size,
    parse_offset,
    parse_time,
    show_bytes,
)
from dafka.console.serve import parse_bind
from dafka.errors import ConfigError
from dafka.groups.admin import GroupInfo, PartitionRow
from dafka.query.protocol import PartitionInfo

A, B, C = "A" * 32, "B" * 32, "C" * 32
P1, P2 = "1" * 32, "2" * 32


def config(min_acks: int = 2) -> dict:
    return {
        "revision": 7,
        "topics": {"ev": {"min_acks": min_acks}},
        "stores": [A, B],
        "numbering": {"ev": [[P1, 0]]},
        "cluster": {"auto_create": True},
        "admins": ["ab" * 32],
    }


STATUS = [
    {
        "url": "tcp://h:1",
        "state": "up",
        "is_leader": True,
        "leader": "t1",
        "term": 3,
        "commit": 10,
        "applied": 10,
        "peers": ["t1", "t2"],
    },
    {"url": "tcp://h:2", "state": "unreachable"},
]


def stores() -> list[StoreView]:
    return [
        StoreView(
            A, "tcp://a", None, (PartitionInfo("ev", P1, 0, 9), PartitionInfo("ev", P2, 0, 4))
        ),
        StoreView(
            B, "tcp://b", None, (PartitionInfo("ev", P1, 0, 9), PartitionInfo("ev", P2, 0, 3))
        ),
        StoreView(C, "tcp://c", None, (PartitionInfo("ev", P2, 0, 4),)),  # untrusted
    ]


def test_a_partition_on_fewer_trusted_stores_than_min_acks_is_flagged() -> None:
    snap = build_snapshot(STATUS, config(), stores())
    parts = {p.partition: p for p in snap.topics["ev"].partitions}
    assert parts[P1].copies == 2 and not parts[P1].below_min_acks
    # P2's head (4) is on A and the untrusted C: one trusted copy of two
    assert parts[P2].copies == 1 and parts[P2].below_min_acks
    assert snap.topics["ev"].below == (parts[P2],)
    assert [h.trusted for h in parts[P2].holdings] == [True, True, False]
    assert parts[P1].label == "0" and parts[P2].label == P2  # numbered, else its id
    assert snap.leader is not None and snap.leader.term == 3
    assert [t.role for t in snap.towers] == ["leader", "unreachable"]
    assert snap.stores_answering == 3 and len(snap.stores) == 3


def test_a_trusted_store_not_heard_is_listed_and_not_answering() -> None:
    snap = build_snapshot(STATUS, config(), stores()[:1])
    rows = {s.node_id: s for s in snap.stores}
    assert rows[B].trusted and not rows[B].heard and not rows[B].answering


def test_no_metadata_is_a_snapshot_with_what_the_stores_said() -> None:
    snap = build_snapshot([{"url": "tcp://h:1", "state": "unreachable"}], None, stores(), ["x"])
    assert snap.leader is None and snap.errors == ("x",) and "ev" in snap.topics


def test_shown_bytes_are_cut_with_a_note() -> None:
    shown = show_bytes(b"x" * (MAX_SHOWN_BYTES * 10))
    assert len(shown.text) == MAX_SHOWN_BYTES
    assert shown.note is not None and "truncated" in shown.note
    assert len(show_bytes(b"\xff" * (MAX_SHOWN_BYTES * 10), Format.HEX).text) < MAX_SHOWN_BYTES * 3


def test_bytes_that_are_not_utf8_are_shown_as_hex_and_said_so() -> None:
    shown = show_bytes(b"\xff\xfek")
    assert shown.text == "ff fe 6b" and shown.note == "not UTF-8: shown as hex"
    assert show_bytes(b'{"a":1}', Format.JSON).text == '{\n  "a": 1\n}'
    assert "not JSON" in (show_bytes(b"{", Format.JSON).note or "")
    assert show_bytes(None).note is not None


def test_a_page_shows_at_most_max_page_records() -> None:
    assert page_size("100000") == MAX_PAGE
    assert page_size(None) == 20 and page_size("7") == 7
    for bad in ("0", "-5", "x"):
        with pytest.raises(ConfigError, match=f"bad limit '{bad}': a whole number from 1"):
            page_size(bad)


@pytest.mark.parametrize("text", ["-1", "abc", "1e3", "9" * 30, str(2**64 - 1), "١"])
def test_a_bad_offset_is_one_line(text: str) -> None:
    with pytest.raises(ConfigError, match=f"bad offset .*: a whole number from 0 to {MAX_OFFSET}"):
        parse_offset(text)
    assert parse_offset(str(MAX_OFFSET)) == MAX_OFFSET


def test_times_are_ms_or_iso() -> None:
    assert parse_time("1000") == 1000
    assert parse_time("1970-01-01T00:00:01Z") == 1000
    with pytest.raises(ConfigError, match="bad time"):
        parse_time("yesterday")


def test_the_console_binds_loopback_unless_told() -> None:
    from dafka.cli.console import DEFAULT_BIND
    from dafka.console import serve

    assert DEFAULT_BIND == serve.DEFAULT_BIND and parse_bind(DEFAULT_BIND)[0] == "127.0.0.1"
    assert parse_bind(":0") == ("127.0.0.1", 0)
    assert parse_bind("127.0.0.1:8480") == ("127.0.0.1", 8480)
    assert parse_bind("[::1]:9") == ("::1", 9)
    for bad in ("8480", "evil.example:80", "1.2.3.4:99999"):
        with pytest.raises(ConfigError):
            parse_bind(bad)


def test_only_the_consoles_own_names_pass_the_host_check() -> None:
    for ok in ("127.0.0.1:80", "localhost", "LOCALHOST:80", "[::1]:80", "10.0.0.5", "[::1]"):
        assert host_allowed(ok, "10.0.0.5", 80), ok
    for bad in (
        "evil.example:80",
        "127.0.0.1.evil.example",
        "",
        None,
        "10.0.0.6",
        "[::1]evil",
        "localhost:abc",
        "lOcAlHoSt:99999",
        "localhost:0",
        "localhost:81",  # not the bound port
        "::1",
        "[::1]:80:80",
        "localhost:80 ",
        "a b",
    ):
        assert not host_allowed(bad, "10.0.0.5", 80), bad
    # bound to every interface: the loopback names pass (no page can rebind them), the
    # unspecified address does not, another name only when allowed (any port, or its own)
    assert host_allowed("localhost:80", "0.0.0.0", 80)
    assert not host_allowed("0.0.0.0:80", "0.0.0.0", 80)
    assert host_allowed("console.example:443", "0.0.0.0", 80, ("console.example",))
    assert host_allowed("console.example", "0.0.0.0", 80, ("console.example",))
    assert not host_allowed("evil.example:443", "0.0.0.0", 80, ("console.example",))
    assert host_allowed("localhost:9000", "127.0.0.1", 80, ("localhost:9000",))
    assert not host_allowed("localhost:9001", "127.0.0.1", 80, ("localhost:9000",))


def test_a_posts_origin_must_be_the_consoles_own() -> None:
    host = parse_host("127.0.0.1:8480")
    assert host is not None
    for ok in (
        "http://127.0.0.1:8480",
        "http://127.0.0.1:8480/topics?x=1",
        "https://127.0.0.1:8480",
    ):
        assert same_origin(ok, host), ok
    for bad in (
        "http://evil.example",
        "http://127.0.0.1:8481",
        "http://127.0.0.1",
        "null",
        "file:///x",
        "http://127.0.0.1:99999",
        "http://127.0.0.1:8480.evil.example",
    ):
        assert not same_origin(bad, host), bad
    plain = parse_host("console.example")
    assert plain is not None and same_origin("https://console.example", plain)


def _group(n: int) -> GroupInfo:
    rows = tuple(PartitionRow("ev", f"{i:032X}", 0, 5, None) for i in range(n))
    return GroupInfo("g", (), rows, 0)


def test_group_lag_series_are_capped_and_the_rest_summed() -> None:
    snap = build_snapshot(STATUS, config(), stores())
    lag = group_lag(snap, {"g": _group(10)}, cap=3)
    assert len(lag) == 3  # the overflow series counts
    assert lag[(OTHER, OTHER, OTHER)] == 8 * 5
    assert len(group_lag(snap, {"g": _group(3)}, cap=3)) == 3  # at the cap: no overflow
    families = {f.name: f for f in cluster_families(snap, {"g": _group(2)}, cap=1000)}
    assert {s.labels["partition"] for s in families["dafka_group_lag_records"].samples} == {
        f"{0:032X}",
        f"{1:032X}",
    }
    under = families["dafka_partitions_under_min_acks"].samples
    assert [(s.labels["topic"], s.value) for s in under] == [("ev", 1)]
    stores_per = {
        s.labels["partition"]: s.value for s in families["dafka_partition_stores"].samples
    }
    assert stores_per == {"0": 2, P2: 1}


def test_topic_forms_read_settings_as_the_cli_does() -> None:
    assert topic_form({"min_acks": "2", "retention_ms": "7d", "retention_bytes": "none"}) == {
        "min_acks": 2,
        "retention_ms": 7 * 86_400_000,
        "retention_bytes": None,
    }
    assert topic_form({"min_acks": "", "name": "x"}) == {}
    with pytest.raises(ConfigError):
        topic_form({"retention_ms": "7 weeks"})


def test_every_family_has_at_most_cap_series_however_many_topics() -> None:
    """Anyone can make topics (auto_create): 171 of them, each with a group, make no more
    than the cap of series in each family, the overflow folded into one _other series."""
    n, cap = 171, 3
    topics = {f"t{i:03}": {"min_acks": 2} for i in range(n)}
    cfg = {**config(), "topics": topics, "numbering": {}}
    views = [StoreView(A, "tcp://a", None, tuple(PartitionInfo(t, P1, 0, 9) for t in topics))]
    snap = build_snapshot(STATUS, cfg, views)
    groups = {
        f"g{i:03}": GroupInfo(f"g{i:03}", (), (PartitionRow(f"t{i:03}", P1, 0, 9, None),), 0)
        for i in range(n)
    }
    families = {f.name: f for f in cluster_families(snap, groups, cap)}
    for name in ("dafka_group_lag_records", "dafka_partition_stores"):
        samples = families[name].samples
        assert len(samples) == cap, (name, len(samples))
        assert {s.labels["topic"] for s in samples if s.labels["partition"] == OTHER} == {OTHER}
    lag = {s.labels["group"]: s.value for s in families["dafka_group_lag_records"].samples}
    assert lag[OTHER] == (n - cap + 1) * 9
    stores_per = {s.labels["topic"]: s.value for s in families["dafka_partition_stores"].samples}
    assert stores_per[OTHER] == 1
    under = {
        s.labels["topic"]: s.value for s in families["dafka_partitions_under_min_acks"].samples
    }
    assert len(under) == cap and under[OTHER] == n - cap + 1  # each topic: 1 of 2 copies


def test_a_partition_only_untrusted_stores_hold_is_apart_and_not_counted() -> None:
    """A rogue store (untrusted) says it holds a partition of ev and of a topic of its own:
    neither is below min_acks nor in the metrics; both are shown apart."""
    rogue = "3" * 32
    claims = (PartitionInfo("ev", rogue, 0, 4), PartitionInfo("zz", rogue, 0, 1))
    views = [*stores()[:2], StoreView(C, "tcp://c", None, claims)]
    snap = build_snapshot(STATUS, config(), views)
    ev = snap.topics["ev"]
    assert [p.partition for p in ev.untrusted] == [rogue]
    assert {p.partition for p in ev.counted} == {P1, P2}
    assert [p.partition for p in ev.below] == [P2]
    assert snap.topics["zz"].below == () and snap.topics["zz"].counted == ()
    families = {f.name: f for f in cluster_families(snap, {}, 1000)}
    under = {
        s.labels["topic"]: s.value for s in families["dafka_partitions_under_min_acks"].samples
    }
    assert under == {"ev": 1}
    stores_per = {s.labels["partition"] for s in families["dafka_partition_stores"].samples}
    assert stores_per == {"0", P2}
    # the metadata trusting none: every store counts, as before
    untrusting = build_snapshot(STATUS, {**config(), "stores": []}, views)
    assert untrusting.topics["ev"].untrusted == ()


def test_a_min_acks_out_of_range_names_the_range() -> None:
    for bad in ("0", "17", "1000", "9" * 5000):
        with pytest.raises(ConfigError, match="a whole number from 1 to 16"):
            topic_form({"min_acks": bad})
    assert topic_form({"min_acks": "16"}) == {"min_acks": 16}
