"""Every command alike (issue 12 point 5): --version, one error style, config checks."""

from __future__ import annotations

import base64
import json
import time
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.procs import Proc, StoreProc, Tower, py

pytestmark = pytest.mark.e2e

ENTRY_POINTS = [
    ["dafka.cli.producer"],
    ["dafka.cli.consumer"],
    ["dafka.cli.store"],
    ["tower"],
    ["dafka.cli.local"],
    ["dafka.cli.keys"],
    ["dafka.cli.raft"],
    ["dafka.cli.admin"],
    ["dafka.cli.admin", "topics", "describe"],
    ["dafka.cli.admin", "query", "heads"],
]


def one_line_error(proc: Proc, code: int, *fragments: str) -> str:
    assert proc.wait() == code, proc.stderr
    lines = [line for line in proc.stderr_lines if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Usage:" not in proc.stderr and "Traceback" not in proc.stderr
    return lines[0]


@pytest.mark.parametrize("command", ENTRY_POINTS, ids=lambda c: " ".join(c))
def test_every_command_has_version(command: list[str]) -> None:
    p = Proc(py(*command, "--version"))
    assert p.wait() == 0, p.stderr
    assert bytes(p.stdout).decode().strip().endswith(" " + version("dafka"))


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["dafka.cli.consumer", "t", "-c", "many"], ["'many' is not a valid", "--help"]),
        (["dafka.cli.producer"], ["missing argument 'TOPIC'"]),
        (["dafka.cli.producer", "t", "--bogus"], ["no such option", "--bogus"]),
        (["dafka.cli.admin", "topics", "lst"], ["no such command 'lst'"]),
        (["dafka.cli.store", "--port", "x"], ["'x' is not a valid integer"]),
        (["dafka.cli.store", "--serve-rate", "0.5"], ["--serve-rate", "0.5"]),
        (["tower", "--nope"], ["no such option"]),
    ],
)
def test_click_usage_mistakes_are_one_line_and_exit_2(
    args: list[str], fragments: list[str]
) -> None:
    one_line_error(Proc(py(*args), stdin=b""), 2, *fragments)


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ('tower = "127.0.0.1:5556"\nretries = 3\n', ["unknown top-level", "retries"]),
        ("[consumer]\nnope = 1\n", ["unknown setting", "nope"]),
        ("[prodcuer]\nmin_acks = 1\n", ["unknown table", "[prodcuer]"]),
        ("tower = \n", ["not valid TOML"]),
    ],
)
def test_config_file_mistakes_are_one_line_naming_key_and_file(
    tmp_path: Path, text: str, fragments: list[str]
) -> None:
    conf = tmp_path / "dafka.toml"
    conf.write_text(text)
    p = Proc(py("dafka.cli.consumer", "t", "--config", str(conf)))
    one_line_error(p, 2, str(conf), *fragments)


@pytest.mark.parametrize(
    "command",
    [["dafka.cli.admin", "groups", "list"], ["dafka.cli.admin", "query", "heads"]],
    ids=["groups list", "query heads"],
)
@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ('tower = "127.0.0.1:5556"\nretries = 3\n', ["unknown top-level", "retries"]),
        ("[admin]\nnope = 1\n", ["unknown setting", "nope"]),
    ],
    ids=["top-level", "table"],
)
def test_every_dafka_subcommand_takes_and_checks_a_config_file(
    tmp_path: Path, command: list[str], text: str, fragments: list[str]
) -> None:
    """``dafka groups`` and ``dafka query`` read --config like the other dafka subcommands."""
    conf = tmp_path / "dafka.toml"
    conf.write_text(text)
    one_line_error(Proc(py(*command, "--config", str(conf))), 2, str(conf), *fragments)


def test_dafka_groups_takes_its_tower_from_the_config_file_and_log_options(
    tmp_path: Path,
) -> None:
    conf = tmp_path / "dafka.toml"
    conf.write_text('tower = "127.0.0.1:1"\n[admin]\ntimeout = 0.5\n')
    args = ["dafka.cli.admin", "groups", "describe", "g", "--config", str(conf)]
    # warnings are log lines (formatted, silenced by --log-level error): the error is one line
    one_line_error(
        Proc(py(*args, "--log-level", "error")),
        1,
        "metadata was not read from the towers (127.0.0.1:1) within 0.5 s",
    )


@pytest.fixture
def platform(tmp_path: Path):
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    yield tower
    store.kill()
    tower.stop()


def consume(tower: Tower, topic: str, *args: str) -> bytes:
    c = Proc(py("dafka.cli.consumer", topic, "--tower", tower.address, *args))
    assert c.wait() == 0, c.stderr
    return bytes(c.stdout)


BINARY = b"a\r\nb\x00c\xff\r\n"


def test_a_file_is_one_record_byte_for_byte(platform: Tower, tmp_path: Path) -> None:
    path = tmp_path / "blob"
    path.write_bytes(BINARY)
    before = time.time() * 1000
    p = Proc(py("dafka.cli.producer", "blobs", str(path), "--tower", platform.address, "-q"))
    assert p.wait() == 0, p.stderr
    after = time.time() * 1000
    exact = consume(platform, "blobs", "--from-beginning", "-e", "-D", "", "--timeout", "30")
    assert exact == BINARY
    (row,) = [
        json.loads(line)
        for line in consume(platform, "blobs", "-o", "0", "-e", "--json").splitlines()
    ]
    assert base64.b64decode(row["value_base64"]) == BINARY
    assert before - 1000 <= row["timestamp"] <= after + 1000
    stamps = consume(platform, "blobs", "-o", "0", "-e", "-f", "%o %T %S\\n").split()
    assert stamps == [b"0", str(row["timestamp"]).encode(), str(len(BINARY)).encode()]


def test_a_delimiter_keeps_carriage_returns_and_nul_round_trips(platform: Tower) -> None:
    data = b"x\r\ny\0\0z\r\n\0"
    p = Proc(
        py("dafka.cli.producer", "nul", "-D", "\\0", "--tower", platform.address, "-q"), stdin=data
    )
    assert p.wait() == 0, p.stderr
    assert consume(platform, "nul", "-o", "0", "-e", "-D", "\\0") == data
    keyed = Proc(
        py("dafka.cli.producer", "keyed", "-D", "\\r\\n", "-K", "\\t", "--tower", platform.address),
        stdin=b"k1\tv\n1\r\nk2\tv2\r\n",
    )
    assert keyed.wait() == 0, keyed.stderr
    got = consume(platform, "keyed", "-o", "0", "-e", "-K", "=", "-D", "|")
    assert got == b"k1=v\n1|k2=v2|"


def test_an_unknown_format_token_is_refused_in_one_line() -> None:
    one_line_error(Proc(py("dafka.cli.consumer", "t", "-f", "%Z %s")), 2, "unknown format token")


def test_files_with_a_delimiter_are_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x")
    p = Proc(py("dafka.cli.producer", "t", str(path), "-D", "\\0"))
    one_line_error(p, 2, "each FILE is one record")
    one_line_error(Proc(py("dafka.cli.producer", "t", str(tmp_path / "nope"))), 2, "nope")


def test_shared_top_level_keys_are_accepted(tmp_path: Path) -> None:
    conf = tmp_path / "dafka.toml"
    conf.write_text(
        'tower = "127.0.0.1:5556"\nhost = "127.0.0.1"\nprofile = "signed"\nlog-level = "error"\n'
        'metrics-port = 0\ncluster = "dafka"\n[consumer]\nformat = "%s\\\\n"\n[store]\nport = 0\n'
    )
    # the file is read, then the topic name is refused: the config was accepted
    p = Proc(py("dafka.cli.consumer", "x" * 256, "--config", str(conf)))
    one_line_error(p, 2, "the limit is 255")


def test_output_choices_on_the_command_line_win_over_the_config_file(tmp_path: Path) -> None:
    conf = tmp_path / "dafka.toml"
    conf.write_text('[consumer]\nformat = "%o %s\\\\n"\n')
    both = Proc(py("dafka.cli.consumer", "t", "-f", "%s", "-D", "\\0"))
    one_line_error(both, 2, "give -f, or -D and -K, not both")
    json_and_f = Proc(py("dafka.cli.consumer", "t", "--json", "-f", "%s"))
    one_line_error(json_and_f, 2, "--json writes JSON lines")
    # the config file's format gives way to --json and -D: the topic is what is refused
    for choice in (["--json"], ["-D", "\\0"]):
        p = Proc(py("dafka.cli.consumer", "x" * 256, "--config", str(conf), *choice))
        one_line_error(p, 2, "the limit is 255")
