"""deploy/: the systemd units name real commands with options those commands have, carry the
hardening the guide promises, and the example config files are ones the commands accept
(issue 38, point 4). docs/deploy.md's hosts and markers are read as its test reads them."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import deploy_guide as dg
from tests import deploy_units as du
from tests import docs_examples as dx

UNITS = sorted(du.UNITS.glob("*.service"))
CONFIGS = {
    "tower.toml": "dafka-tower",
    "store.toml": "dafka-store",
    "kafka.toml": "dafka-kafka",
    "client.toml": None,
}
REQUIRED = {
    "Unit": ("Description", "After", "Wants"),
    "Service": (
        "User",
        "Group",
        "ExecStart",
        "Restart",
        "StateDirectory",
        "ReadWritePaths",
        "NoNewPrivileges",
        "ProtectSystem",
        "LimitNOFILE",
        "EnvironmentFile",
    ),
    "Install": ("WantedBy",),
}
_OPTION = re.compile(r"^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)(?:\s*/\s*(--[a-z][a-z0-9-]*))?", re.M)


def invoke(script: str, args: list[str]) -> tuple[int, str]:
    """Run console script ``script`` in this process (click's runner): exit code, output."""
    import importlib

    from click.testing import CliRunner

    module, _, func = dx.entry_points()[script].partition(":")
    result = CliRunner().invoke(getattr(importlib.import_module(module), func), args)
    return result.exit_code, result.output


def help_options(script: str) -> set[str]:
    """The long options ``SCRIPT --help`` lists (the CLI itself says what it accepts)."""
    code, out = invoke(script, ["--help"])
    assert code == 0, out
    return {o for pair in _OPTION.findall(out) for o in pair if o}


def test_there_are_units_for_the_tower_and_the_store() -> None:
    assert {u.name for u in UNITS} >= {"dafka-tower.service", "dafka-store.service"}


@pytest.mark.parametrize("path", UNITS, ids=[u.name for u in UNITS])
def test_a_unit_has_the_settings_and_hardening_the_guide_promises(path: Path) -> None:
    unit = du.parse_unit(path)
    for section, keys in REQUIRED.items():
        for key in keys:
            assert unit.all(section, key), f"{path.name}: [{section}] {key}= missing"
    service = dict(unit.sections["Service"])
    assert service["User"] == "dafka" and service["Restart"] == "on-failure"
    assert service["NoNewPrivileges"] == "yes" and service["ProtectSystem"] == "strict"
    assert int(service["LimitNOFILE"]) >= 65536
    state = f"/var/lib/{service['StateDirectory']}"
    assert service["ReadWritePaths"].split() == [state]  # the data directory, nothing else
    assert service.get("CapabilityBoundingSet", "x") == ""  # no capabilities


@pytest.mark.parametrize("path", UNITS, ids=[u.name for u in UNITS])
def test_exec_start_names_a_console_script_and_options_it_has(path: Path) -> None:
    unit = du.parse_unit(path)
    words = du.expand_exec(unit.exec_start, {})
    script = Path(words[0]).name
    assert words[0] == f"/opt/dafka/bin/{script}", words[0]
    assert script in dx.entry_points(), f"{script} is not a console script of setup.cfg"
    given = {w for w in words[1:] if w.startswith("--")}
    assert given, unit.exec_start
    assert given <= help_options(script), given - help_options(script)
    config = words[words.index("--config") + 1]
    assert (du.CONFIGS / Path(config).name).exists(), f"{config} is not in deploy/config/"


@pytest.mark.parametrize("path", UNITS, ids=[u.name for u in UNITS])
def test_what_exec_start_expands_the_guide_writes(path: Path) -> None:
    """Every ${VAR} of ExecStart is set by the guide's cluster.env or host.env."""
    guide = (dx.ROOT / dg.GUIDE).read_text()
    written = set(re.findall(r"^([A-Z_]+)=", guide, re.M))
    written |= set(re.findall(r"printf '([A-Z_]+)=%s\\n([A-Z_]+)=%s", guide)[0])
    used = du.referenced_variables(du.parse_unit(path).exec_start)
    assert used and used <= written, used - written
    files = {f for f in du.parse_unit(path).all("Service", "EnvironmentFile")}
    assert files == {"/etc/dafka/cluster.env", "/etc/dafka/host.env"}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_example_config_is_one_the_commands_accept(name: str) -> None:
    scripts = [CONFIGS[name]] if CONFIGS[name] else ["dafka-producer", "dafka-consumer"]
    for script in scripts:
        code, out = invoke(script, ["--config", str(du.CONFIGS / name), "--version"])
        assert code == 0, f"{script} --config {name}: {out}"


def test_a_config_with_an_unknown_key_is_refused(tmp_path: Path) -> None:
    """The check above can fail: the commands refuse a key they do not have."""
    bad = tmp_path / "store.toml"
    bad.write_text((du.CONFIGS / "store.toml").read_text() + "no-such-key = 1\n")
    code, out = invoke("dafka-store", ["--config", str(bad), "--version"])
    assert code == 2 and "no_such_key" in out, out


def test_exec_start_expands_as_systemd_does() -> None:
    env = {"ME": "10.0.0.1", "LIST": "a b"}
    assert du.expand_exec("/x --bind ${ME}:5556 $LIST ${LIST}", env) == [
        "/x",
        "--bind",
        "10.0.0.1:5556",
        "a",
        "b",
        "a b",
    ]


def test_the_guide_names_its_hosts_and_every_run_block_a_host_group() -> None:
    guide = dg.load()
    assert set(guide.host_exports) == set(dg.HOSTS)
    assert {guide.address(h) for h in dg.HOSTS} <= {str(a) for a in dg.SUBNET.hosts()}
    assert len({guide.address(h) for h in dg.HOSTS}) == len(dg.HOSTS)
    hosts = {h for step in guide.steps for h in step.hosts}
    assert hosts == set(dg.HOSTS)
    text = " ".join(step.block.text for step in guide.steps)
    for what in ("systemctl enable --now dafka-tower", "systemctl enable --now dafka-store"):
        assert what in text
    for var in dg.COPIED:
        assert f"${var}" in text, f"the guide never uses {var}"


def test_the_guide_is_not_run_by_the_local_docs_runner() -> None:
    local = dx.scenarios(dx.load())
    assert not [s for s in local if s.path == dg.GUIDE]
    assert [s for s in dx.scenarios(dx.load(), hosted=True) if s.path == dg.GUIDE]


def test_the_three_tower_group_of_the_readme_names_its_admin() -> None:
    """The README's three-tower line once left the group without an admin."""
    readme = (dx.ROOT / "README.md").read_text()
    line = next(p for p in readme.split("\n\n") if "--raft-peers t1=" in p)
    assert "--admin-key" in line, line


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_systemd_analyze_finds_nothing_but_the_missing_install() -> None:
    """An extra check where systemd is installed (the checks above need nothing): systemd's own
    parser takes every setting; the one complaint is that /opt/dafka is not installed here."""
    proc = subprocess.run(
        ["systemd-analyze", "verify", *map(str, UNITS)], capture_output=True, text=True, timeout=60
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    stray = [line for line in lines if "Command /opt/dafka/bin/" not in line]
    assert stray == [], stray
