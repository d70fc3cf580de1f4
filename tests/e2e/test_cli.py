"""The command-line tools as a user runs them: pipes, exit codes, one-line errors."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.procs import Proc, StoreProc, Tower, py

pytestmark = pytest.mark.e2e


@pytest.fixture
def platform(tmp_path: Path):
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    yield tower
    store.kill()
    tower.stop()


def producer(towers: str, topic: str, data: bytes, *extra: str) -> Proc:
    return Proc(py("dafka.cli.producer", topic, "--tower", towers, *extra), stdin=data)


def consumer(towers: str, *args: str) -> Proc:
    return Proc(py("dafka.cli.consumer", *args, "--tower", towers))


def assert_one_line_error(proc: Proc, code: int, fragment: str) -> None:
    assert proc.wait() == code, proc.stderr
    lines = [line for line in proc.stderr_lines if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and fragment in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


def test_lines_in_lines_out(platform: Tower) -> None:
    lines = b"".join(f"line {i}\n".encode() for i in range(1, 501))
    p = producer(platform.address, "cli", lines)
    assert p.wait() == 0, p.stderr
    assert "500 records acknowledged" in p.stderr
    c = consumer(platform.address, "cli", "--from-beginning", "-e", "--timeout", "30")
    assert c.wait() == 0, c.stderr
    assert bytes(c.stdout) == lines


def test_count_format_and_json(platform: Tower) -> None:
    assert producer(platform.address, "fmt", b"a\nb\r\nc\n", "-q").wait() == 0
    c = consumer(platform.address, "fmt", "-o", "beginning", "-c", "2", "-f", "%t %o %s\\n")
    assert c.wait() == 0, c.stderr
    assert bytes(c.stdout) == b"fmt 0 a\nfmt 1 b\n"
    j = consumer(platform.address, "fmt", "--from-beginning", "-e", "--json", "--timeout", "30")
    assert j.wait() == 0, j.stderr
    rows = [json.loads(line) for line in bytes(j.stdout).splitlines()]
    assert [(r["offset"], r["value"]) for r in rows] == [(0, "a"), (1, "b"), (2, "c")]
    assert all(r["topic"] == "fmt" and len(r["partition"]) == 32 for r in rows)


def test_offset_n_starts_every_partition_there(platform: Tower) -> None:
    assert producer(platform.address, "offs", b"0\n1\n2\n3\n", "-q").wait() == 0
    c = consumer(platform.address, "offs", "-o", "2", "-e", "--timeout", "30")
    assert c.wait() == 0, c.stderr
    assert bytes(c.stdout) == b"2\n3\n"


def test_producer_without_a_store_fails_after_its_timeout() -> None:
    tower = Tower()
    try:
        p = producer(tower.address, "nobody", b"x\ny\n", "--timeout", "1.5")
        assert_one_line_error(p, 1, "2 of 2 records were not acknowledged")
    finally:
        tower.stop()


def test_env_and_config_file(platform: Tower, tmp_path: Path) -> None:
    env_p = Proc(
        py("dafka.cli.producer", "envtopic", "-q"),
        stdin=b"via env\n",
        env={"DAFKA_TOWER": platform.address},
    )
    assert env_p.wait() == 0, env_p.stderr
    conf = tmp_path / "dafka.toml"
    conf.write_text(f'tower = "{platform.address}"\n[consumer]\nformat = "%o:%s\\\\n"\n')
    c = Proc(
        py(
            "dafka.cli.consumer",
            "envtopic",
            "--config",
            str(conf),
            "--from-beginning",
            "-e",
            "--timeout",
            "30",
        )
    )
    assert c.wait() == 0, c.stderr
    assert bytes(c.stdout) == b"0:via env\n"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["x" * 256], "the limit is 255"),
        (["t", "--tower", "nohost"], "expected HOST:PORT"),
        (["t", "--host", "0.0.0.0"], "wildcard"),
        (["t", "--profile", "rfc46", "-K", ":"], "signed wire profile"),
    ],
)
def test_producer_user_mistakes_are_one_line(args: list[str], fragment: str) -> None:
    p = Proc(py("dafka.cli.producer", *args), stdin=b"")
    assert_one_line_error(p, 2, fragment)


def test_consumer_bad_offset_is_one_line() -> None:
    c = Proc(py("dafka.cli.consumer", "t", "-o", "soon"))
    assert_one_line_error(c, 2, "bad offset")


def test_store_unwritable_data_dir_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    s = Proc(py("dafka.cli.store", "--data-dir", str(blocker / "db")))
    assert_one_line_error(s, 2, "data directory")


@pytest.mark.parametrize(
    "command",
    [
        ["tower", "--bind", "127.0.0.1:0", "--data-dir", "{dir}"],
        [
            "dafka.cli.local",
            "--tower-bind",
            "127.0.0.1:0",
            "--tower-data-dir",
            "{dir}",
            "--data-dir",
            "{tmp}/store",
            "--admin-key",
            "{tmp}/admin.key",
        ],
    ],
    ids=["tower", "local"],
)
def test_tower_data_dir_that_cannot_be_made_is_one_line(tmp_path: Path, command: list[str]) -> None:
    """The Raft peer's thread made it (a traceback); the command checks it first."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    args = [
        a.replace("{dir}", str(blocker / "tower")).replace("{tmp}", str(tmp_path)) for a in command
    ]
    t = Proc(py(*args))
    assert_one_line_error(t, 2, f"cannot create tower data directory {blocker / 'tower'}")


def test_tower_port_in_use_is_one_line() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        t = Proc(py("tower", "--bind", f"127.0.0.1:{port}"))
        assert_one_line_error(t, 2, "already in use")


def test_local_platform_prints_what_to_run_next(tmp_path: Path) -> None:
    local = Proc(
        py("dafka.cli.local", "--tower-bind", "127.0.0.1:0", "--data-dir", str(tmp_path / "data"))
    )
    try:
        m = local.wait_line(r"tower on tcp://127\.0\.0\.1:(\d+)")  # startup lines: stderr
        address = f"127.0.0.1:{m.group(1)}"
        assert "dafka-producer" in local.stderr and not bytes(local.stdout)
        assert producer(address, "local", b"works\n", "-q").wait() == 0
        c = consumer(address, "local", "--from-beginning", "-e", "--timeout", "30")
        assert c.wait() == 0 and bytes(c.stdout) == b"works\n"
        assert local.terminate() == 0
    finally:
        local.kill()


def test_keys_round_trip_with_a_key_separator(platform: Tower) -> None:
    lines = b"user-1:signed in\nno separator here\nuser-2:a:b\n:empty key\n"
    assert producer(platform.address, "keys", lines, "-K", ":", "-q").wait() == 0
    c = consumer(
        platform.address, "keys", "--from-beginning", "-e", "-f", "%k|%s\\n", "--timeout", "30"
    )
    assert c.wait() == 0, c.stderr
    assert bytes(c.stdout) == b"user-1|signed in\n|no separator here\nuser-2|a:b\n|empty key\n"
    j = consumer(platform.address, "keys", "--from-beginning", "-e", "--json", "--timeout", "30")
    assert j.wait() == 0, j.stderr
    keys = [json.loads(line)["key"] for line in bytes(j.stdout).splitlines()]
    assert keys == ["user-1", None, "user-2", ""]


def test_the_rfc46_profile_from_flag_env_and_config(tmp_path: Path) -> None:
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address, "--profile", "rfc46")
    try:
        env_p = Proc(
            py("dafka.cli.producer", "old", "--tower", tower.address),
            stdin=b"one\ntwo\n",
            env={"DAFKA_PROFILE": "rfc46"},
        )
        assert env_p.wait() == 0, env_p.stderr
        assert "2 records acknowledged" in env_p.stderr
        assert "any store" not in env_p.stderr  # rfc46 ACKs are not signed: no trust notice
        conf = tmp_path / "dafka.toml"
        conf.write_text('profile = "rfc46"\n')
        c = Proc(
            py(
                "dafka.cli.consumer",
                "old",
                "--tower",
                tower.address,
                "--config",
                str(conf),
                "--from-beginning",
                "-e",
                "--timeout",
                "30",
            )
        )
        assert c.wait() == 0, c.stderr
        assert bytes(c.stdout) == b"one\ntwo\n"
        # a signed consumer sees nothing of it: the store holds rfc46 records only
        s = consumer(tower.address, "old", "--from-beginning", "-c", "1")
        with pytest.raises(AssertionError):
            s.wait_line_stdout(".", timeout=3)
        s.kill()
    finally:
        store.kill()
        tower.stop()
