"""The docs-examples checker (tests/docs_examples.py): how it reads the markdown, moves
ports and judges a command; and the docs' examples it runs, read statically (issue 34,
point 9). The examples themselves run in tests/integration/test_docs_examples.py."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests import docs_examples as dx

DOC = """\
# A doc

<!-- run: demo -->
```sh
dafka-tower --bind 127.0.0.1:5556 &        # a tower
seq 3 | dafka-producer t \\
    --timeout 5                             # prints "3 records acknowledged"
```

<!-- run: demo
dafka-local &
-->
```python
print("hi")
```

<!-- skip: needs Spark -->
```sh
make pipeline
```

```text
dafka-store [--data-dir DIR]
```

```
dafka topics list
```

```sh
dafka-consumer t -e
```
"""


def test_blocks_carry_the_marker_above_their_fence() -> None:
    blocks = dx.parse("doc.md", DOC)
    assert [(b.lang, b.marker, b.arg) for b in blocks] == [
        ("sh", "run", "demo"),
        ("python", "run", "demo"),
        ("sh", "skip", "needs Spark"),
        ("text", "", ""),
        ("", "", ""),
        ("sh", "", ""),
    ]
    assert blocks[0].line == 4 and blocks[0].where == "doc.md:4"
    assert blocks[1].hidden == "dafka-local &"
    assert blocks[1].text == 'print("hi")'


def test_a_block_with_commands_and_no_marker_is_reported() -> None:
    bad = dx.unmarked(dx.parse("doc.md", DOC))
    # the untagged one starting with a command and the unmarked sh block; not the text one
    assert [(b.lang, b.text) for b in bad] == [
        ("", "dafka topics list"),
        ("sh", "dafka-consumer t -e"),
    ]


def test_a_fence_never_closed_is_an_error() -> None:
    with pytest.raises(ValueError, match="never closed"):
        dx.parse("doc.md", "```sh\nseq 3\n")


def test_scenarios_group_a_files_run_blocks_in_order() -> None:
    (scenario,) = dx.scenarios(dx.parse("doc.md", DOC))
    assert scenario.id == "doc.md::demo"
    assert [b.lang for b in scenario.blocks] == ["sh", "python"]
    assert dx.summary(dx.parse("doc.md", DOC)) == {"run": 2, "skip": 1}


def test_commands_join_continuations_and_read_background_and_prints() -> None:
    first = dx.parse("doc.md", DOC)[0]
    tower, producer = dx.commands(first.text)
    assert tower.background and not producer.background
    assert producer.text.startswith("seq 3 | dafka-producer t --timeout 5")
    assert producer.prints == ("3 records acknowledged",)
    assert tower.prints == ()
    assert dx.commands("a && b")[0].background is False
    assert dx.commands("# a comment only\n\nx=1")[0].text == "x=1"
    with pytest.raises(ValueError, match="continuation"):
        dx.commands("seq 3 \\")


def test_a_hash_inside_quotes_is_not_a_comment() -> None:
    assert dx._strip_comment("echo 'a # b' # c") == "echo 'a # b'"
    assert dx._strip_comment("grep -c x#y") == "grep -c x#y"


def test_ports_move_by_one_offset_and_nothing_else_does() -> None:
    text = (
        "dafka-tower --bind 127.0.0.1:5556 --metrics-port 9100 &\n"
        "dafka-raft peer --bind tcp://127.0.0.1:7001 --peer b=tcp://127.0.0.1:7002@ab12\n"
        "curl -s http://127.0.0.1:9101/metrics; seq 5000 | dafka-consumer t -o -3 -c 5600\n"
        "dafka topics create t --retention-ms 7d; ssh host:22; dafka-store --metrics-port 0\n"
        "dafka topics list --admin-key .dafka/tower-5556/admin.key\n"
    )
    assert dx.doc_ports(text) == {5556, 9100, 7001, 7002, 9101}
    moved = dx.map_ports(text, 10_000)
    assert "127.0.0.1:15556 --metrics-port 19100" in moved
    assert "tcp://127.0.0.1:17001 --peer b=tcp://127.0.0.1:17002@ab12" in moved
    assert "127.0.0.1:19101/metrics; seq 5000 | dafka-consumer t -o -3 -c 5600" in moved
    assert "host:22; dafka-store --metrics-port 0" in moved
    assert ".dafka/tower-15556/admin.key" in moved


def test_a_background_command_waits_for_the_ports_it_binds() -> None:
    cmd = dx.commands("dafka-local --tower-bind 127.0.0.1:15556 --metrics-port 19101 &")[0]
    assert cmd.bind_ports() == [(15556, False), (19101, True)]
    assert dx.commands("dafka-producer t --metrics-port 0")[0].bind_ports() == []


def test_the_offset_keeps_every_moved_port_below_the_ephemeral_range() -> None:
    import random

    rng = random.Random(7)
    for _ in range(20):
        offset = dx.pick_offset({5556, 9102}, rng)
        assert 11_000 <= 5556 + offset and 9102 + offset + 3 < 32_768


# The runner: a scenario's shell, judged command by command


def _scenario(tmp_path: Path, text: str) -> dx.Scenario:
    scenario = dx.scenarios(dx.parse("doc.md", f"<!-- run: s -->\n```sh\n{text}\n```\n"))[0]
    return scenario


def _run(tmp_path: Path, text: str) -> list[str]:
    log: list[str] = []
    dx.run_scenario(_scenario(tmp_path, text), tmp_path / "w", command_timeout=10, log=log)
    return log


def test_the_runner_passes_a_block_that_prints_what_it_says(tmp_path: Path) -> None:
    log = _run(tmp_path, 'X=4; cd /tmp\necho "$X $(pwd)"   # prints "4 /tmp"\ncat')
    assert len(log) == 3  # cat read /dev/null, not the runner's commands


def test_the_runner_fails_a_command_that_exits_non_zero(tmp_path: Path) -> None:
    with pytest.raises(dx.CommandFailed, match="exit status 3"):
        _run(tmp_path, "echo one\n(exit 3)\necho never")
    with pytest.raises(dx.CommandFailed, match="exit status 1"):
        _run(tmp_path, "false | cat")  # pipefail


def test_the_runner_fails_a_command_that_does_not_print_what_it_says(tmp_path: Path) -> None:
    with pytest.raises(dx.CommandFailed, match="did not print 'bye'"):
        _run(tmp_path, 'echo hello   # prints "bye"')


def test_the_runner_ends_a_command_at_its_deadline(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(dx.CommandFailed, match="no end within"):
        dx.run_scenario(_scenario(tmp_path, "sleep 30"), tmp_path / "w", command_timeout=1)
    assert time.monotonic() - started < 15


def test_the_runner_kills_background_processes_at_the_end(tmp_path: Path) -> None:
    log = _run(tmp_path, "sleep 300 &\necho $! > pid")
    assert len(log) == 2
    pid = int((tmp_path / "w" / "pid").read_text())
    assert not dx._running(pid)  # gone, or a zombie no one here reaps


# The docs themselves, read without running them


BLOCKS = dx.load()


def test_every_example_of_the_docs_is_marked_run_or_skip() -> None:
    assert [b.where for b in dx.unmarked(BLOCKS)] == []
    counts = dx.summary(BLOCKS)
    assert counts["run"] >= 14, counts  # what runs today: a floor, so none is dropped quietly
    for b in dx.skipped(BLOCKS):
        assert b.arg, f"{b.where}: a skipped block says why"


def _tower_groups() -> list[tuple[str, list[str]]]:
    """Each run scenario's commands that start a tower of a group (--raft-peers) and the
    dafka client commands of the same scenario."""
    out = []
    for scenario in dx.scenarios(BLOCKS):
        cmds = [
            c.text
            for b in scenario.blocks
            if b.lang == "sh"
            for c in dx.commands(b.hidden + "\n" + b.text)
        ]
        if any("--raft-peers" in c for c in cmds):
            out.append((scenario.id, cmds))
    return out


def test_a_group_of_towers_in_the_docs_has_an_admin_and_its_clients_name_its_cluster() -> None:
    """docs/metadata.md's three towers once had no way to a first admin that worked as
    written: `dafka topics create` failed until a tower restarted. Every tower of a doc's
    group is given the first admin, and every `dafka` client names the group's cluster."""
    groups = _tower_groups()
    assert groups, "the docs show no group of towers any more"
    for scenario, cmds in groups:
        towers = [c for c in cmds if re.match(r"^\S*dafka-tower\b", c)]
        assert len(towers) >= 3, scenario
        clusters = {re.search(r"--cluster (\S+)", c).group(1) for c in towers}  # type: ignore[union-attr]
        for tower in towers:
            assert re.search(r"--admin-key(-file)? \S+", tower), f"{scenario}: {tower}"
        for client in (c for c in cmds if re.match(r"^\S*dafka (topics|stores|cluster)", c)):
            named = re.search(r"--cluster (\S+)", client)
            assert named and {named.group(1)} == clusters, f"{scenario}: {client}"


# Flags: what the docs give a command, in prose or in a block, is an option it has

SCRIPTS = dx.entry_points()


def test_flag_uses_read_spans_blocks_and_alternatives() -> None:
    text = (
        "Run `dafka-store --data-dir D --no-such` or `.venv/bin/dafka topics alter t --min-acks 2`.\n"
        "```text\n"
        "dafka topics list | describe events | delete events --bogus\n"
        "dafka-tower --bind H:P \\\n"
        "    --raft-peers X   # --not-a-flag in a comment\n"
        "curl -s URL | grep --count x\n"
        "```\n"
        "`dafka-raft members ... --key-file K`, `--durable` alone names no command\n"
        "```sh\n"
        "K=$(dafka-keys create -s d | awk '{print $2}')\n"
        "```\n"
        "```python\n"
        "from dafka import Producer  # dafka-store --python-is-not-read\n"
        "```\n"
    )
    uses = [(u.line, u.command, u.flag) for u in dx.flag_uses("d.md", text, SCRIPTS)]
    assert [u for u in uses if u[2]] == [
        (1, "dafka-store", "--data-dir"),
        (1, "dafka-store", "--no-such"),
        (1, "dafka topics alter t", "--min-acks"),
        (3, "dafka topics delete", "--bogus"),
        (5, "dafka-tower", "--bind"),
        (5, "dafka-tower", "--raft-peers"),
        (8, "dafka-raft members ...", "--key-file"),
    ]
    assert [u[1] for u in uses if not u[2]] == [
        "dafka-store",
        "dafka topics alter t",
        "dafka topics list",
        "dafka topics describe",
        "dafka topics delete",
        "dafka-tower",
        "dafka-raft members ...",
        "dafka-keys create d",  # in a shell block "| awk" is a pipe, not a subcommand
    ]


def test_a_subcommand_a_group_lacks_is_told_apart() -> None:
    assert dx._walk("dafka topics lsit", SCRIPTS)[1] == "lsit"
    assert dx._walk("dafka topics list", SCRIPTS)[1] == ""
    assert dx._walk("dafka groups describe billing", SCRIPTS)[1] == ""  # an argument
    assert dx._walk("dafka-raft ...", SCRIPTS)[1] == ""


def test_a_flag_a_command_lacks_is_told_apart() -> None:
    assert "--min-acks" in dx.command_flags("dafka topics alter t", SCRIPTS)
    assert "--bogus" not in dx.command_flags("dafka topics delete", SCRIPTS)
    assert "--data-dir" not in dx.command_flags("dafka-raft members", SCRIPTS)
    assert "--data-dir" in dx.command_flags("dafka-raft ...", SCRIPTS)


def test_the_docs_give_no_command_a_flag_it_lacks() -> None:
    assert dx.unknown_flags() == []


def _forever(tmp_path: Path, prints: str) -> None:
    doc = (
        "<!-- run: s forever -->\n```python\nimport time\n"
        f'print("{prints}")   # prints "ready"\ntime.sleep(300)\n```\n'
    )
    (scenario,) = dx.scenarios(dx.parse("doc.md", doc))
    dx.run_scenario(scenario, tmp_path / "w", command_timeout=3)


def test_a_block_that_runs_for_ever_passes_once_it_printed_what_it_says(tmp_path: Path) -> None:
    started = time.monotonic()
    _forever(tmp_path, "ready")
    assert time.monotonic() - started < 15  # not its 300 s: stopped once it printed


def test_a_block_that_runs_for_ever_fails_if_it_never_prints_it(tmp_path: Path) -> None:
    with pytest.raises(dx.CommandFailed, match="did not print 'ready'"):
        _forever(tmp_path, "not yet")
