"""Issue 34, points 4, 6 and 10 (``e@``): the command-line tools say what happened, with
the right exit code, where they used to exit 0 silently or end in a traceback.

Real processes (a tower with its metadata, one store) shared by the tests of this module;
each test uses its own topics.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.attack_mutants import mutated
from tests.procs import Proc, StoreProc, Tower, py

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def towers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tower = Tower()
    store = StoreProc(tmp_path_factory.mktemp("store") / "db", tower.address)
    yield tower.address
    store.kill()
    tower.stop()


def produce(towers: str, topic: str, data: bytes, *extra: str) -> None:
    p = Proc(py("dafka.cli.producer", topic, "--tower", towers, "-q", *extra), stdin=data)
    assert p.wait() == 0, p.stderr


def consume(towers: str, *args: str) -> Proc:
    return Proc(py("dafka.cli.consumer", *args, "--tower", towers))


def one_line_error(proc: Proc, code: int, fragment: str) -> None:
    assert proc.wait(60) == code, proc.stderr
    lines = [line for line in proc.stderr_lines if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and fragment in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------- point 4: -e exits


def test_a_topic_nothing_holds_is_an_error_with_e(towers: str) -> None:
    c = consume(towers, "nosuchtopic", "-e")
    one_line_error(c, 1, "topic 'nosuchtopic' does not exist (not in the cluster metadata")
    assert bytes(c.stdout) == b""


def test_a_registered_empty_topic_is_read_to_its_end(towers: str) -> None:
    made = Proc(py("dafka.cli.admin", "topics", "create", "empty34", "--tower", towers))
    assert made.wait(60) == 0, made.stderr
    c = consume(towers, "empty34", "-e", "-o", "beginning")
    assert c.wait(60) == 0, c.stderr
    assert "topic 'empty34' has no records yet" in c.stderr and bytes(c.stdout) == b""


def test_a_regex_topic_reads_every_topic_it_matches(towers: str) -> None:
    produce(towers, "rx34.a", b"1\n2\n")
    produce(towers, "rx34.b", b"3\n")
    produce(towers, "other34", b"4\n")
    c = consume(towers, "^rx34\\.", "-e", "-o", "beginning", "-f", "%t %s\\n")
    assert c.wait(60) == 0, c.stderr
    assert sorted(bytes(c.stdout).decode().splitlines()) == ["rx34.a 1", "rx34.a 2", "rx34.b 3"]
    none = consume(towers, "^nomatch34", "-e")
    one_line_error(none, 1, "no topic matches ^nomatch34")


def test_an_offset_past_the_end_is_an_error_with_e(towers: str) -> None:
    produce(towers, "past34", b"a\nb\nc\n")
    c = consume(towers, "past34", "-e", "-o", "100")
    one_line_error(c, 1, "-o 100 is past the end of past34/")
    assert "(high watermark 3: the next offset to be written)" in c.stderr
    at_end = consume(towers, "past34", "-e", "-o", "3")  # the end itself: nothing, fine
    assert at_end.wait(60) == 0, at_end.stderr
    assert bytes(at_end.stdout) == b""


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["-o", ""], "bad offset ''"),
        (["-o", str(1 << 64)], "below 2^64"),
        (["-o", "-" + str(1 << 64)], "below 2^64"),
        (["-o", "beginning", "-o", "end"], "one start offset"),
        (["-e", "--timeout", "-1"], "--timeout"),
        (["--watermarks", "-c", "1"], "--watermarks reads no records: it takes no -c"),
        (["--watermarks", "-f", "%s"], "it takes no -f"),
        (["--watermarks", "-e", "--json"], "it takes no -e, --json"),
        (["-o", "e@1000", "--profile", "rfc46"], "needs the signed profile"),
    ],
)
def test_consumer_usage_mistakes_are_one_line_and_exit_2(args: list[str], fragment: str) -> None:
    one_line_error(Proc(py("dafka.cli.consumer", "t", *args)), 2, fragment)


# ------------------------------------------- point 6: one convention for the end


def test_watermarks_query_heads_and_describe_say_the_same_end(towers: str) -> None:
    produce(towers, "marks34", b"a\nb\nc\n")
    w = consume(towers, "marks34", "--watermarks")
    assert w.wait(60) == 0, w.stderr
    (line,) = bytes(w.stdout).decode().splitlines()
    _, partition, low, high = line.split()
    assert (low, high) == ("0", "3")
    q = Proc(py("dafka.cli.admin", "query", "heads", "marks34", "--tower", towers))
    assert q.wait(60) == 0, q.stderr
    (row,) = bytes(q.stdout).decode().splitlines()
    assert row.split()[1:] == ["marks34", partition, "0", "3"]
    d = Proc(py("dafka.cli.admin", "topics", "describe", "marks34", "--tower", towers))
    assert d.wait(60) == 0, d.stderr
    text = bytes(d.stdout).decode()
    assert f"  {partition} low 0 high 3 on store " in text, text
    assert "high = next offset to be written" in text
    j = Proc(py("dafka.cli.admin", "topics", "describe", "marks34", "--json", "--tower", towers))
    assert j.wait(60) == 0, j.stderr
    (part,) = json.loads(bytes(j.stdout))["partitions"]
    assert (part["low"], part["high"]) == (0, 3)


# ---------------------------------------------------- point 10: s@ and e@ (kcat)


def test_start_and_stop_at_a_time(towers: str, tmp_path: Path) -> None:
    state = str(tmp_path / "producer")  # one partition across both runs
    produce(towers, "time34", b"a\nb\nc\n", "--state-dir", state)
    time.sleep(0.05)  # the second batch is stamped later
    produce(towers, "time34", b"d\ne\n", "--state-dir", state)
    c = consume(towers, "time34", "-e", "-o", "beginning", "-f", "%T %s\\n")
    assert c.wait(60) == 0, c.stderr
    rows = [line.split() for line in bytes(c.stdout).decode().splitlines()]
    assert [v for _, v in rows] == ["a", "b", "c", "d", "e"]
    later = rows[3][0]
    assert int(later) > int(rows[2][0])
    # e@: each partition stops at its first record stamped at or after the time; without
    # -e too, once every partition has stopped
    for extra in (["-e"], []):
        stop = consume(towers, "time34", "-o", "beginning", "-o", f"e@{later}", *extra)
        assert stop.wait(60) == 0, stop.stderr
        assert bytes(stop.stdout) == b"a\nb\nc\n"
    start = consume(towers, "time34", "-e", "-o", f"s@{later}")
    assert start.wait(60) == 0, start.stderr
    assert bytes(start.stdout) == b"d\ne\n"


# ---------------------------------------------------------- point 6: the producer


def test_an_unreadable_file_is_refused_before_any_file_is_sent(towers: str, tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.write_bytes(b"one")
    with socket.socket(socket.AF_UNIX) as sock:
        if os.geteuid() == 0:  # root reads a 0000 file: a socket refuses even root (ENXIO)
            bad = tmp_path / "bad.sock"
            sock.bind(str(bad))
        else:
            bad = tmp_path / "bad"
            bad.write_bytes(b"two")
            bad.chmod(0)
        p = Proc(py("dafka.cli.producer", "files34", str(good), str(bad), "--tower", towers))
        one_line_error(p, 2, f"cannot read FILE {bad}")
    assert "nothing was sent" in p.stderr
    c = consume(towers, "files34", "-e", "-o", "beginning")
    assert c.wait(60) == 1 and bytes(c.stdout) == b"", c.stderr  # no record, no topic


@pytest.mark.parametrize(
    ("topic", "command"),
    [
        ("a\nb", "dafka.cli.producer"),
        ("\x1b[2J", "dafka.cli.producer"),
        ("a\nb", "dafka.cli.consumer"),
    ],
)
def test_a_topic_with_a_control_character_is_refused(topic: str, command: str) -> None:
    one_line_error(Proc(py(command, topic), stdin=b"x\n"), 2, "contains a control character")


def test_the_admin_refuses_to_create_one(towers: str) -> None:
    p = Proc(py("dafka.cli.admin", "topics", "create", "bad\r34", "--tower", towers))
    one_line_error(p, 2, "contains a control character")


def test_producer_timeout_must_not_be_negative() -> None:
    one_line_error(
        Proc(py("dafka.cli.producer", "t", "--timeout", "-1"), stdin=b""), 2, "--timeout"
    )


# ------------------------------------------------- point 6: Ctrl-C during start-up


@pytest.mark.parametrize(
    ("target", "module"),
    [
        ("dafka.consumer._facade", "dafka.cli.consumer"),  # while the node types load
        ("dafka.producer._facade", "dafka.cli.producer"),
        ("click", "dafka.cli.consumer"),  # before main runs: the command's own imports
        ("dafka.metadata.client", "dafka.cli.admin"),
    ],
)
def test_ctrl_c_while_a_command_starts_is_exit_130_without_a_traceback(
    target: str, module: str
) -> None:
    p = Proc(py("tests.e2e.interrupt_import", target, module, "t", "--tower", "127.0.0.1:9"))
    assert p.wait(60) == 130, p.stderr
    assert p.stderr.strip() == "", p.stderr


def test_a_real_ctrl_c_at_any_moment_of_start_up_leaves_no_traceback() -> None:
    """SIGINT at moments through a consumer's start-up (no tower: it waits), counted from
    when ``dafka.cli`` has been imported (``-X importtime`` says so on stderr): the
    interpreter's own start before that runs no Dafka code. Every one must be 130, or
    death by SIGINT (a shell shows 130 too) if it lands while the interpreter exits."""
    for delay in (0.0, 0.05, 0.1, 0.2, 0.4, 0.8):
        cmd = [sys.executable, "-X", "importtime", "-m", "dafka.cli.consumer", "t"]
        p = Proc([*cmd, "--tower", "127.0.0.1:9"])
        p.wait_line(r"\| dafka\.cli$", timeout=30)
        time.sleep(delay)
        p.p.send_signal(signal.SIGINT)
        assert p.wait(60) in (130, -signal.SIGINT), (delay, p.stderr[-3000:])
        assert "Traceback" not in p.stderr and "KeyboardInterrupt" not in p.stderr, (
            delay,
            p.stderr[-3000:],
        )


def test_a_topic_whose_read_acl_refuses_the_consumer_is_an_error_not_empty(towers: str) -> None:
    """Red team F1/F2: a store says nothing of a topic its read ACL keeps from this
    consumer, and ``-e`` exited 0 with "has no records yet" over 3 stored records;
    ``--watermarks`` exited 0 with "no partitions"."""
    produce(towers, "acl34", b"1\n2\n3\n")
    closed = Proc(
        py(
            "dafka.cli.admin",
            "topics",
            "alter",
            "acl34",
            "--consumers",
            "AB" * 16,
            "--tower",
            towers,
        )
    )
    assert closed.wait(60) == 0, closed.stderr
    deadline = time.monotonic() + 30
    while True:  # until the store has applied the ACL (it follows the metadata)
        c = consume(towers, "acl34", "-e", "-o", "beginning", "--wait", "5")
        code = c.wait(60)
        if code != 0 or time.monotonic() > deadline:
            break
        assert bytes(c.stdout) in (b"", b"1\n2\n3\n"), c.stdout  # before the ACL: all of it
        time.sleep(0.5)
    one_line_error(c, 1, "topic 'acl34' has a read ACL and the stores refuse this consumer")
    assert bytes(c.stdout) == b""
    marks = consume(towers, "acl34", "--watermarks", "--wait", "5")
    one_line_error(marks, 1, "has a read ACL")


def test_output_that_cannot_be_written_is_one_line_and_a_closed_pipe_is_not_success(
    towers: str,
) -> None:
    """Red team F3/F4: ``> /dev/full`` ended in an OSError traceback; ``| head -1`` exited
    0 with one record of thousands written."""
    import subprocess

    produce(towers, "out34", b"".join(b"%d\n" % i for i in range(3000)))
    cmd = mutated(py("dafka.cli.consumer", "out34", "-e", "-o", "beginning", "--tower", towers))
    with open("/dev/full", "wb") as full:
        p = subprocess.run(cmd, stdout=full, stderr=subprocess.PIPE, timeout=60, check=False)
    err = p.stderr.decode()
    assert p.returncode == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and len(lines) == 1, err
    assert lines[0].startswith("error: ") and "could not be written" in lines[0], err
    reader = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert reader.stdout is not None and reader.stderr is not None
    first = reader.stdout.readline()
    reader.stdout.close()  # as `| head -1` does
    code = reader.wait(60)
    err = reader.stderr.read().decode()
    reader.stderr.close()
    assert first == b"0\n" and code == 141, (code, err)
    assert "Traceback" not in err, err
