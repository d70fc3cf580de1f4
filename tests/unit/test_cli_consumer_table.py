"""``dafka-consumer --table``'s arguments (the reading is in tests/integration)."""

from __future__ import annotations

from click.testing import CliRunner

from dafka.cli.consumer import main


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_table_refuses_what_would_start_or_stop_it_elsewhere():
    for extra, flag in (
        (["-e"], "-e"),
        (["-o", "beginning"], "-o"),
        (["-c", "3"], "-c"),
        (["--from-beginning"], "--from-beginning"),
        (["-G", "g"], "-G"),
    ):
        result = run("--table", "kv", *extra)
        assert result.exit_code == 2, result.output
        assert f"takes no {flag}" in result.output
    result = run("--table", "kv", "other")
    assert result.exit_code == 2 and "give no other TOPICS" in result.output
