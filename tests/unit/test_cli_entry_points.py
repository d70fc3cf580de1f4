"""Every console script is a Dafka command: --version and the one-line error style."""

from __future__ import annotations

import configparser
import importlib
from pathlib import Path

import click
import pytest

from dafka.cli.common import Command, Group

ROOT = Path(__file__).resolve().parents[2]


def _scripts() -> list[tuple[str, str]]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    lines = cfg["options.entry_points"]["console_scripts"].strip().splitlines()
    pairs = [line.split("=", 1) for line in lines]
    return [(name.strip(), target.strip()) for name, target in pairs]


@pytest.mark.parametrize(("name", "target"), _scripts())
def test_every_console_script_is_a_dafka_command(name: str, target: str) -> None:
    module, _, attr = target.partition(":")
    command = getattr(importlib.import_module(module), attr)
    assert isinstance(command, Command | Group), f"{name}: use cls=Command or cls=Group"

    def walk(cmd: click.Command) -> None:
        assert isinstance(cmd, Command | Group), f"{name} {cmd.name}"
        assert any(p.name == "version" for p in cmd.params), f"{name} {cmd.name}: no --version"
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)

    walk(command)


def test_the_metrics_host_default_is_the_nodes() -> None:
    """dafka.cli.metrics spells it out so that a command does not load prometheus_client
    at import (issue 34: start-up time)."""
    from dafka.cli.metrics import DEFAULT_HOST as CLI_DEFAULT
    from dafka.io.metrics import DEFAULT_HOST

    assert CLI_DEFAULT == DEFAULT_HOST


def test_the_package_imports_the_node_types_when_first_used() -> None:
    import subprocess
    import sys

    code = (
        "import sys, dafka, dafka.cli.consumer, dafka.cli.producer; "
        "print(sorted(m for m in ('dafka.consumer._facade', 'dafka.producer._facade', "
        "'prometheus_client') if m in sys.modules)); print(dafka.Consumer.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", "Consumer"]
