"""The linearizability checker itself: known answers and generated histories."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from .linearizability import KvModel, Operation, check, check_kv


def w(client, call, ret, value, key="x"):
    return Operation(client, call, ret, ("put", key, value))


def r(client, call, ret, value, key="x"):
    return Operation(client, call, ret, ("get", key), value)


def test_empty_history_is_linearizable():
    assert check_kv([])


def test_known_linearizable_history():
    history = [
        w(0, 0, 10, 1),
        r(1, 5, 15, 1),  # overlaps the write: may see it
        r(2, 6, 7, None),  # overlaps the write: may miss it
        w(0, 12, 20, 2),
        r(1, 16, 18, 1),  # overlaps put(2): may still see 1
        r(2, 21, 25, 2),
    ]
    assert check_kv(history)


def test_stale_read_after_completed_write_is_not_linearizable():
    history = [w(0, 0, 5, 1), r(1, 6, 10, None)]
    assert not check_kv(history)


def test_reads_must_not_go_back_in_time():
    # both reads overlap the write, but once 1 was seen a later read cannot miss it
    history = [w(0, 0, 10, 1), r(1, 1, 2, 1), r(2, 3, 4, None)]
    assert not check_kv(history)


def test_value_never_written_is_not_linearizable():
    assert not check_kv([w(0, 0, 1, 1), r(1, 2, 3, 7)])


def test_concurrent_writes_any_order_but_one_order_for_everyone():
    ok = [w(0, 0, 10, 1), w(1, 0, 10, 2), r(2, 11, 12, 2), r(3, 13, 14, 2)]
    bad = [w(0, 0, 10, 1), w(1, 0, 10, 2), r(2, 11, 12, 2), r(3, 13, 14, 1)]
    assert check_kv(ok)
    assert not check_kv(bad)


def test_pending_write_may_take_effect_late_or_never():
    assert check_kv([w(0, 0, None, 1), r(1, 5, 6, None), r(1, 7, 8, 1)])
    assert check_kv([w(0, 0, None, 1), r(1, 5, 6, None)])
    assert not check_kv([w(0, 0, None, 1), r(1, 5, 6, 1), r(1, 7, 8, None)])


def test_keys_are_checked_independently():
    history = [w(0, 0, 1, 1, "a"), w(0, 2, 3, 2, "b"), r(1, 4, 5, 1, "a"), r(1, 6, 7, None, "b")]
    assert not check_kv(history)
    assert check_kv(history[:3])


def test_equal_times_overlap():
    assert check_kv([w(0, 0, 5, 1), r(1, 5, 6, None)])


@st.composite
def linearizable_histories(draw):
    """Run operations atomically at random instants inside their intervals."""
    n = draw(st.integers(1, 9))
    ops = []
    value = {}
    points = sorted(draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n, unique=True)))
    counter = 0
    for point in points:
        key = draw(st.sampled_from("ab"))
        before = draw(st.integers(0, 50))
        after = draw(st.integers(0, 50))
        client = len(ops)
        if draw(st.booleans()):
            counter += 1
            value[key] = counter
            pending = draw(st.integers(0, 9)) == 0
            ops.append(w(client, point - before, None if pending else point + after, counter, key))
        else:
            ops.append(r(client, point - before, point + after, value.get(key), key))
    return ops


@settings(max_examples=150, deadline=None)
@given(linearizable_histories())
def test_generated_linearizable_histories_pass(history):
    assert check_kv(history)


@settings(max_examples=150, deadline=None)
@given(linearizable_histories(), st.data())
def test_a_read_of_a_never_written_value_fails(history, data):
    reads = [k for k, op in enumerate(history) if op.input[0] == "get"]
    if not reads:
        return
    k = data.draw(st.sampled_from(reads))
    op = history[k]
    history[k] = Operation(op.client, op.call, op.ret, op.input, -1)
    assert not check_kv(history)


def test_custom_model():
    class Counter(KvModel):
        def init(self):
            return 0

        def step(self, state, input, output):
            if input[0] == "inc":
                return True, state + 1
            return output == state, state

    inc = Operation(0, 0, 2, ("inc", "c"))
    assert check(Counter(), [inc, Operation(1, 3, 4, ("read", "c"), 1)])
    assert not check(Counter(), [inc, Operation(1, 3, 4, ("read", "c"), 0)])
