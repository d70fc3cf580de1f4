"""The progress line (issue 12 point 6) with a fake clock and a fake terminal."""

from __future__ import annotations

from dafka.cli.progress import Progress, end_progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(enabled: bool = True) -> tuple[Progress, list[bytes], Clock]:
    out: list[bytes] = []
    clock = Clock()
    return Progress(enabled, clock=clock, write=out.append), out, clock


def test_redraws_at_most_five_times_a_second() -> None:
    bar, out, clock = make()
    assert bar.update("one")
    assert not bar.update("two") and not bar.due()
    clock.now += 0.2
    assert bar.due() and bar.update("three")
    assert out == [b"\rone", b"\rthree"]


def test_a_shorter_line_blanks_the_longer_one_and_end_adds_a_newline() -> None:
    bar, out, clock = make()
    bar.update("a long line")
    bar.end("done")
    assert out == [b"\ra long line", b"\rdone       ", b"\n"]
    bar.end("again")  # nothing shown any more: nothing to end
    assert out[-1] == b"\n" and len(out) == 3


def test_disabled_or_never_drawn_writes_nothing() -> None:
    bar, out, _ = make(enabled=False)
    assert not bar.update("x") and not bar.due()
    bar.end("y")
    with bar.ticking(lambda: "z"):
        pass
    quiet, out2, _ = make()
    quiet.end("never shown")
    assert out == [] and out2 == []


def test_the_same_text_is_not_drawn_again() -> None:
    bar, out, clock = make()
    bar.update("same")
    clock.now += 1
    assert not bar.update("same")
    assert out == [b"\rsame"]


def test_end_progress_ends_every_line_shown() -> None:
    bar, out, _ = make()
    other, out2, _ = make()
    bar.update("shown")
    end_progress()
    end_progress()  # once only
    assert out == [b"\rshown", b"\n"] and out2 == []
