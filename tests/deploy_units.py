"""The systemd units of ``deploy/systemd/``: read them as systemd does (the parts the units
use), and expand their ``ExecStart=`` lines.

Used by ``tests/unit/test_deploy_units.py`` (the units name real commands and options) and by
``tests/deploy_systemctl.py`` (a stand-in for ``systemctl`` that starts a unit's ``ExecStart=``
the way systemd would, for ``tests/integration/test_deploy_guide.py``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNITS = ROOT / "deploy" / "systemd"
CONFIGS = ROOT / "deploy" / "config"

_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")


@dataclass
class Unit:
    """A unit file: each section's settings in file order (a key may repeat)."""

    name: str
    sections: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def all(self, section: str, key: str) -> list[str]:
        return [v for k, v in self.sections.get(section, []) if k == key]

    def get(self, section: str, key: str, default: str = "") -> str:
        values = self.all(section, key)
        return values[-1] if values else default

    @property
    def exec_start(self) -> str:
        return self.get("Service", "ExecStart")


def parse_unit(path: Path) -> Unit:
    """Sections, ``key=value`` lines, ``\\`` continuations and ``#``/``;`` comments."""
    unit = Unit(path.name)
    section = ""
    pending = ""
    for raw in path.read_text().splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            unit.sections.setdefault(section, [])
            continue
        key, sep, value = line.partition("=")
        if not sep or not section:
            raise ValueError(f"{path}: not a setting: {raw!r}")
        unit.sections[section].append((key.strip(), value.strip()))
    return unit


def read_environment_file(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines as systemd's ``EnvironmentFile=`` reads them (no shell expansion;
    quotes around a whole value are removed)."""
    env: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def expand_exec(line: str, env: Mapping[str, str]) -> list[str]:
    """``ExecStart=`` as systemd splits and expands it: ``${VAR}`` within a word is replaced
    by the value as is (one word); ``$VAR`` as a word of its own is split at whitespace."""
    line = line.lstrip("-@:+!")  # prefixes: none is used by our units, but they are legal
    words: list[str] = []
    for word in shlex.split(line):
        m = re.fullmatch(r"\$(\w+)", word)
        if m:
            words += env.get(m.group(1), "").split()
            continue
        words.append(_VAR.sub(lambda v: env.get(v.group(1) or v.group(2), ""), word))
    return words


def referenced_variables(line: str) -> set[str]:
    """The environment variables an ``ExecStart=`` line expands."""
    return {a or b for a, b in _VAR.findall(line)}
