"""``--mesh topics|full`` on dafka-producer and dafka-consumer reaches ``NodeConfig.mesh``:
from the command line, ``DAFKA_MESH`` and a ``--config`` file; a bad value is one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import dafka.consumer
import dafka.producer
from dafka.cli import consumer, producer
from dafka.config import MESHES, NodeConfig
from dafka.errors import DafkaError

COMMANDS = {"producer": producer.main, "consumer": consumer.main}


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
    monkeypatch.delenv("DAFKA_MESH", raising=False)
    return seen


def _run(command: str, *args: str, env: dict[str, str] | None = None) -> click.testing.Result:
    return CliRunner().invoke(
        COMMANDS[command], ["t", "--tower", "127.0.0.1:1", *args], input="", env=env
    )


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("args", "mesh"), [((), "topics"), (("--mesh", "full"), "full")])
def test_mesh_flag_reaches_the_node_config(
    nodes: list[NodeConfig], command: str, args: tuple[str, ...], mesh: str
) -> None:
    result = _run(command, *args)
    assert result.exit_code == 1, result.output  # the fake node stopped it, after parsing
    assert [n.mesh for n in nodes] == [mesh]


@pytest.mark.parametrize("command", COMMANDS)
def test_mesh_from_the_environment_and_the_config_file(
    nodes: list[NodeConfig], command: str, tmp_path: Path
) -> None:
    assert _run(command, env={"DAFKA_MESH": "full"}).exit_code == 1
    top = tmp_path / "top.toml"
    top.write_text('mesh = "full"\n')
    assert _run(command, "--config", str(top)).exit_code == 1
    table = tmp_path / "table.toml"
    table.write_text(f'mesh = "topics"\n[{command}]\nmesh = "full"\n')
    assert _run(command, "--config", str(table)).exit_code == 1
    assert _run(command, "--config", str(table), "--mesh", "topics").exit_code == 1
    assert [n.mesh for n in nodes] == ["full", "full", "full", "topics"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_mesh_is_one_line_and_exit_2(
    nodes: list[NodeConfig], command: str, tmp_path: Path
) -> None:
    result = _run(command, "--mesh", "partial")
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ") and "--mesh" in lines[0] and "'partial'" in lines[0]
    assert "'topics', 'full'" in lines[0]
    bad = tmp_path / "bad.toml"
    bad.write_text('mesh = "everyone"\n')
    result = _run(command, "--config", str(bad))
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1 and "'everyone'" in result.output
    assert nodes == []  # no node was started


def test_the_choices_are_the_configs_meshes() -> None:
    option = next(p for p in producer.main.params if p.name == "mesh")
    assert isinstance(option.type, click.Choice)
    assert tuple(option.type.choices) == MESHES
    assert {p.name for p in consumer.main.params} >= {"mesh"}


def test_mesh_reaches_the_consumers_table_mode(nodes: list[NodeConfig]) -> None:
    result = CliRunner().invoke(
        consumer.main, ["--table", "t", "--tower", "127.0.0.1:1", "--mesh", "full"]
    )
    assert result.exit_code == 1, result.output
    assert [n.mesh for n in nodes] == ["full"]
