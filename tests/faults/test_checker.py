"""The fault checker on synthetic logs: clean histories count zero, and each count can fire."""

from __future__ import annotations

from tests.faults.checker import (
    COUNTS,
    Ack,
    Delivery,
    check,
    content,
    format_table,
    parse,
)

P, Q = "A" * 32, "B" * 32


def history(n: int = 5) -> tuple[list[Ack], list[Delivery], dict[str, dict[tuple[str, int], str]]]:
    """Two writers, ``n`` records each, acknowledged, stored on two stores and delivered."""
    acks: list[Ack] = []
    deliveries: list[Delivery] = []
    held: dict[tuple[str, int], str] = {}
    for part, writer in ((P, "p1"), (Q, "p2")):
        for seq in range(n):
            value = content(writer, 0, seq)
            acks.append(Ack(part, seq, value))
            deliveries.append(Delivery(part, seq, value))
            held[(part, seq)] = value
    return acks, deliveries, {"s1": dict(held), "s2": dict(held)}


def nonzero(report: object) -> dict[str, int]:
    return {k: v for k, v in report.counts().items() if v}  # type: ignore[attr-defined]


def test_content_round_trips_and_detects_corruption() -> None:
    value = content("p1", 3, 42)
    parsed = parse(value)
    assert parsed is not None and (parsed.writer, parsed.incarnation, parsed.seq) == ("p1", 3, 42)
    assert parse(value[:-1] + ("0" if value[-1] != "0" else "1")) is None
    assert parse(value.replace("p1", "p2", 1)) is None
    assert parse("garbage") is None and parse("") is None


def test_a_clean_history_counts_zero() -> None:
    acks, deliveries, stores = history()
    report = check(acks, deliveries, stores)
    assert report.ok(), report.examples
    assert (report.acked, report.delivered, report.stored) == (10, 10, 10)


def test_an_acknowledged_record_no_store_holds_is_lost() -> None:
    acks, deliveries, stores = history()
    for held in stores.values():
        del held[(P, 4)]
    report = check(acks, deliveries, stores)
    assert report.acked_lost == 1
    # one store is enough
    _, _, stores = history()
    del stores["s1"][(P, 4)]
    assert check(acks, deliveries, stores).acked_lost == 0


def test_an_acknowledged_record_never_delivered() -> None:
    acks, deliveries, stores = history()
    deliveries = [d for d in deliveries if (d.partition, d.offset) != (Q, 4)]
    report = check(acks, deliveries, stores)
    assert report.acked_undelivered == 1
    assert report.stuck_partitions == 1  # Q never reached offset 4
    assert nonzero(report) == {"acked_undelivered": 1, "stuck_partitions": 1}


def test_duplicates_by_offset_and_by_content() -> None:
    acks, deliveries, stores = history()
    report = check(acks, [*deliveries, deliveries[2]], stores)
    assert nonzero(report) == {"duplicates": 1}
    # the same record stored again at a new offset (a producer re-sending it)
    acks, deliveries, stores = history()
    again = content("p1", 0, 1)
    for held in stores.values():
        held[(P, 5)] = again
    deliveries.append(Delivery(P, 5, again))
    report = check(acks, deliveries, stores)
    assert report.duplicates == 1
    assert report.order_inversions == 1  # seq 1 stored after seq 4


def test_order_inversions_in_delivery() -> None:
    acks, deliveries, stores = history()
    deliveries[1], deliveries[2] = deliveries[2], deliveries[1]
    report = check(acks, deliveries, stores)
    assert report.order_inversions == 1
    assert report.gaps == 1  # 0 -> 2 jumped over a stored offset


def test_gaps_are_jumps_over_existing_records_only() -> None:
    acks, deliveries, stores = history()
    report = check(acks, [d for d in deliveries if d.offset != 2], stores)
    assert report.gaps == 2  # P and Q jump 1 -> 3
    # offsets nobody acknowledged or stored (a range closed by its producer) may be skipped
    acks = [a for a in acks if a.offset != 2]
    stores = {n: {k: v for k, v in h.items() if k[1] != 2} for n, h in stores.items()}
    report = check(acks, [d for d in deliveries if d.offset != 2], stores)
    assert report.ok(), report.examples


def test_content_mismatches() -> None:
    acks, deliveries, stores = history()
    stores["s2"][(P, 1)] = content("p1", 0, 99)
    assert check(acks, deliveries, stores).content_mismatches >= 1
    acks, deliveries, stores = history()
    deliveries[0] = Delivery(P, 0, deliveries[0].value[:-1] + "x")
    assert nonzero(check(acks, deliveries, stores)) == {"content_mismatches": 1}
    acks, deliveries, stores = history()
    acks.append(Ack(P, 0, content("p1", 0, 7)))
    assert check(acks, deliveries, stores).content_mismatches >= 1


def test_stuck_partitions_when_records_exist_past_the_consumer() -> None:
    acks, deliveries, stores = history()
    for held in stores.values():  # stored but never acknowledged (a producer died)
        held[(Q, 5)] = content("p2", 0, 5)
    report = check(acks, deliveries, stores)
    assert nonzero(report) == {"stuck_partitions": 1}


def test_crashed_processes_are_counted() -> None:
    acks, deliveries, stores = history()
    report = check(acks, deliveries, stores, ["s1 exited 1: boom"])
    assert nonzero(report) == {"crashed": 1}
    assert report.examples["crashed"] == ["s1 exited 1: boom"]


def test_every_count_has_a_test_and_the_table_has_every_column() -> None:
    acks, deliveries, stores = history()
    table = format_table([("seed1", check(acks, deliveries, stores))])
    for name in COUNTS:
        assert name in table


def test_a_fresh_reader_that_cannot_reach_the_end_is_stuck() -> None:
    acks, deliveries, stores = history()
    readback = [d for d in deliveries if d.partition == Q or d.offset < 3]
    report = check(acks, deliveries, stores, readback=readback)
    assert nonzero(report) == {"stuck_partitions": 1}
    assert "fresh consumer read to 2" in report.examples["stuck_partitions"][0]
    assert check(acks, deliveries, stores, readback=deliveries).ok()


def test_the_read_back_is_checked_like_the_live_consumer() -> None:
    acks, deliveries, stores = history()
    readback = [*deliveries, deliveries[0]]
    assert nonzero(check(acks, deliveries, stores, readback=readback)) == {"duplicates": 1}


def test_a_partition_whose_producer_stalled_after_healing_is_stuck() -> None:
    acks, deliveries, stores = history()
    report = check(acks, deliveries, stores, stalled=[P])
    assert nonzero(report) == {"stuck_partitions": 1}


def test_records_on_fewer_stores_than_min_acks_are_counted() -> None:
    acks, deliveries, stores = history()
    assert check(acks, deliveries, stores, min_acks=2).ok()
    for offset in (1, 2):
        del stores["s2"][(P, offset)]
    report = check(acks, deliveries, stores, min_acks=2)
    assert nonzero(report) == {"below_min_acks": 2}
    assert report.examples["below_min_acks"] == [f"{P}: 2 records (1..2) on fewer than 2 stores"]
    assert check(acks, deliveries, stores, min_acks=1).ok()
    # a copy that differs from what was acknowledged is no copy (and a mismatch)
    stores["s2"][(P, 1)] = content("p9", 0, 1)
    report = check(acks, deliveries, stores, min_acks=2)
    assert report.below_min_acks == 2 and report.content_mismatches >= 1
    # none left at all is acked_lost, not below_min_acks
    del stores["s1"][(Q, 0)], stores["s2"][(Q, 0)]
    assert check(acks, deliveries, stores, min_acks=2).acked_lost == 1


def test_corrupt_batches_served_are_counted() -> None:
    acks, deliveries, stores = history()
    report = check(acks, deliveries, stores, bad_served=["s1: batch 3..4 of P", "reader: 1"])
    assert nonzero(report) == {"bad_served": 2}


def test_acknowledged_metadata_changes_lost_are_counted() -> None:
    acks, deliveries, stores = history()
    report = check(acks, deliveries, stores, metadata_lost=["topic rot1 (acknowledged) is gone"])
    assert nonzero(report) == {"metadata_lost": 1}
