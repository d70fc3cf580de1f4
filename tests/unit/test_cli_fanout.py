"""``--tower-fanout one|all`` on dafka-producer, dafka-consumer and dafka-store reaches
``NodeConfig.tower_fanout``: from the command line, ``DAFKA_TOWER_FANOUT`` and a ``--config``
file (top level or the command's table); a bad value is one line and exit 2, no node started."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import dafka.cli.store
import dafka.consumer
import dafka.producer
from dafka.cli import consumer, producer, store
from dafka.config import FANOUTS, NodeConfig
from dafka.errors import DafkaError

COMMANDS = {"producer": producer.main, "consumer": consumer.main, "store": store.main}
TWO_TOWERS = "127.0.0.1:1,127.0.0.1:3"


class _Started(DafkaError):
    """Raised by the fake node once it has its NodeConfig: the command stops there (exit 1)."""


@pytest.fixture
def nodes(monkeypatch: pytest.MonkeyPatch) -> list[NodeConfig]:
    """The NodeConfig each command built, in place of starting a node."""
    seen: list[NodeConfig] = []

    def fake(*args: object, node: NodeConfig, **kwargs: object) -> None:
        seen.append(node)
        raise _Started("fake node")

    monkeypatch.setattr(dafka.producer, "Producer", fake)
    monkeypatch.setattr(dafka.consumer, "Consumer", fake)
    monkeypatch.setattr(dafka.cli.store, "Store", fake)
    monkeypatch.delenv("DAFKA_TOWER_FANOUT", raising=False)
    return seen


def _run(
    command: str, *args: str, env: dict[str, str] | None = None, tmp: Path | None = None
) -> click.testing.Result:
    where = ["-d", str(tmp / "db")] if command == "store" and tmp is not None else []
    topic = [] if command == "store" else ["t"]
    return CliRunner().invoke(
        COMMANDS[command], [*topic, "--tower", TWO_TOWERS, *where, *args], input="", env=env
    )


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("args", "fanout"), [((), "one"), (("--tower-fanout", "all"), "all")])
def test_the_flag_reaches_the_node_config(
    nodes: list[NodeConfig], command: str, args: tuple[str, ...], fanout: str, tmp_path: Path
) -> None:
    result = _run(command, *args, tmp=tmp_path)
    assert result.exit_code == 1, result.output  # the fake node stopped it, after parsing
    assert [n.tower_fanout for n in nodes] == [fanout]
    assert len(nodes[0].towers) == 2


@pytest.mark.parametrize("command", COMMANDS)
def test_the_environment_and_the_config_file(
    nodes: list[NodeConfig], command: str, tmp_path: Path
) -> None:
    assert _run(command, env={"DAFKA_TOWER_FANOUT": "all"}, tmp=tmp_path).exit_code == 1
    top = tmp_path / "top.toml"
    top.write_text('tower_fanout = "all"\n')
    assert _run(command, "--config", str(top), tmp=tmp_path).exit_code == 1
    table = tmp_path / "table.toml"
    table.write_text(f'tower_fanout = "one"\n[{command}]\ntower-fanout = "all"\n')
    assert _run(command, "--config", str(table), tmp=tmp_path).exit_code == 1
    given = ("--config", str(table), "--tower-fanout", "one")
    assert _run(command, *given, tmp=tmp_path).exit_code == 1
    assert [n.tower_fanout for n in nodes] == ["all", "all", "all", "one"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_fanout_is_one_line_and_exit_2(
    nodes: list[NodeConfig], command: str, tmp_path: Path
) -> None:
    result = _run(command, "--tower-fanout", "some", tmp=tmp_path)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ") and "--tower-fanout" in lines[0]
    assert "'some'" in lines[0] and "'one', 'all'" in lines[0]
    bad = tmp_path / "bad.toml"
    bad.write_text('tower_fanout = "every"\n')
    result = _run(command, "--config", str(bad), tmp=tmp_path)
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1 and "'every'" in result.output
    assert nodes == []  # no node was started


def test_the_choices_are_the_configs_fanouts() -> None:
    for main in COMMANDS.values():
        option = next(p for p in main.params if p.name == "tower_fanout")
        assert isinstance(option.type, click.Choice)
        assert tuple(option.type.choices) == FANOUTS


def test_the_fanout_reaches_the_consumers_table_mode(nodes: list[NodeConfig]) -> None:
    result = CliRunner().invoke(
        consumer.main, ["--table", "t", "--tower", TWO_TOWERS, "--tower-fanout", "all"]
    )
    assert result.exit_code == 1, result.output
    assert [n.tower_fanout for n in nodes] == ["all"]


def test_the_fanout_reaches_the_kafka_listeners_nodes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """dafka-kafka's own nodes (partition writers, group commits) take --tower-fanout: the
    options reach ``_backend``, whose GroupCommits gets the NodeConfig (faked here, so no
    tower is asked and nothing binds)."""
    import dafka.kafka.commits
    import dafka.kafka.lease_leadership
    from dafka.cli import kafka

    seen: list[NodeConfig] = []

    def commits(*args: object, node: NodeConfig, **kwargs: object) -> None:
        seen.append(node)
        raise _Started("fake commits")

    monkeypatch.setattr(dafka.kafka.lease_leadership, "register_listener", lambda *a: None)
    monkeypatch.setattr(dafka.kafka.commits, "GroupCommits", commits)
    captured: dict[str, object] = {}

    monkeypatch.setattr(kafka, "_run", lambda limits, options: captured.update(options))
    monkeypatch.setattr(kafka.asyncio, "run", lambda value: None)  # the fake is no coroutine
    args = ["--tower", TWO_TOWERS, "--state-dir", str(tmp_path), "--tower-fanout", "all"]
    result = CliRunner().invoke(kafka.main, args)
    assert result.exit_code == 0, result.output
    assert captured["tower_fanout"] == "all"
    with pytest.raises(_Started):
        kafka._backend(captured, None)
    assert [n.tower_fanout for n in seen] == ["all"]
