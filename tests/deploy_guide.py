"""docs/deploy.md as a test: its hosts, its blocks, and a shell on each host.

Each host of the guide is a network namespace (tests/faults/netns.py) with the address the
guide gives it, and its own ``/etc`` (a copy of this machine's), ``/var/lib``, ``/var/log``,
``/opt`` and ``/root`` (empty directories of the test's, bound over them in the host's mount
namespace, so nothing the guide writes there reaches this machine; an interpreter, virtual
environment or checkout under ``/root``, as pyenv puts them, is bound back in place and
``/root`` made 0711, so that the ``dafka`` user can run them). ``/opt/dafka`` is the
running virtual environment (where the guide installs Dafka). Each host has one ``bash``
for the whole run, as an operator has a terminal open on it: variables carry over from block
to block. A block runs whole, under ``set -e``: every command of it must succeed.

What the test sets in the hosts' shells, and nothing else: ``ME`` and ``TOWER_ID`` from the
guide's table of hosts (its ``tower1: export ME=...`` lines, run as written), and the keys the
guide says to copy between hosts from what a host printed (:data:`COPIED`); ``PATH`` starts
with a stand-in for ``systemctl`` (tests/deploy_systemctl.py), ``DEPLOY_TEST_RUN`` is where it
keeps a unit's pid and output, ``PYTHONPATH`` the checkout's code.
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests import docs_examples as dx

GUIDE = "docs/deploy.md"
TOWERS = ("tower1", "tower2", "tower3")
STORES = ("store1", "store2", "store3")
HOSTS = (*TOWERS, *STORES, "admin", "app")
GROUPS: dict[str, tuple[str, ...]] = {
    "all": HOSTS,
    "servers": (*TOWERS, *STORES),
    "towers": TOWERS,
    "stores": STORES,
    **{h: (h,) for h in HOSTS},
}
"""``<!-- run: deploy-GROUP -->``: the hosts a block runs on, in this order."""
SUBNET = ipaddress.ip_network("10.38.0.0/24")

COPIED: dict[str, tuple[str, str]] = {
    "TOWER1_KEY": ("tower1", "public_key"),
    "TOWER2_KEY": ("tower2", "public_key"),
    "TOWER3_KEY": ("tower3", "public_key"),
    "ADMIN_KEY": ("admin", "public_key"),
    "STORE1_ID": ("store1", "node_id"),
    "STORE2_ID": ("store2", "node_id"),
    "STORE3_ID": ("store3", "node_id"),
    "LISTENER_KEY": ("app", "public_key"),
}
"""What the guide says to copy to every host: variable -> (host, the field it printed)."""

_HOST_LINE = re.compile(r"^(\w+): (export [A-Z_]+=\S+(?: [A-Z_]+=\S+)*)$")
_PRINTED = re.compile(r"^(node_id|public_key)\s+([0-9A-Fa-f]{32,64})$", re.M)


@dataclass(frozen=True)
class Step:
    block: dx.Block
    hosts: tuple[str, ...]


@dataclass
class Guide:
    host_exports: dict[str, str]  # host -> its "export ME=..." line
    steps: list[Step] = field(default_factory=list)

    def address(self, host: str) -> str:
        m = re.search(r"\bME=(\S+)", self.host_exports[host])
        if not m:
            raise ValueError(f"{GUIDE}: no ME= for {host}")
        return m.group(1)


def load(root: Path = dx.ROOT) -> Guide:
    """The guide's table of hosts and its runnable blocks, in order, each with its hosts."""
    blocks = dx.parse(GUIDE, (root / GUIDE).read_text())
    exports: dict[str, str] = {}
    for b in blocks:
        lines = [_HOST_LINE.match(line) for line in b.text.strip().splitlines()]
        if b.lang == "text" and lines and all(lines):
            exports = {m.group(1): m.group(2) for m in lines if m}
    if set(exports) != set(HOSTS):
        raise ValueError(f"{GUIDE}: the table of hosts names {sorted(exports)}, not {HOSTS}")
    guide = Guide(exports)
    for b in blocks:
        if b.marker != "run":
            continue
        group = b.scenario.removeprefix(dx.HOSTED)
        if not b.scenario.startswith(dx.HOSTED) or group not in GROUPS:
            raise ValueError(f"{b.where}: run marker {b.scenario!r} names no host group")
        guide.steps.append(Step(b, GROUPS[group]))
    return guide


def printed(output: str) -> dict[str, str]:
    """``node_id`` / ``public_key`` as ``dafka-keys`` prints them."""
    return {k: v for k, v in _PRINTED.findall(output)}


class Host:
    """One host: its directories, and its shell in its namespace."""

    def __init__(self, name: str, ns: str, workdir: Path, env: dict[str, str]) -> None:
        self.name = name
        self.dir = workdir / "hosts" / name
        self.run_dir = self.dir / "run"
        for sub in ("var-lib", "var-log", "opt", "root", "run"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-a", "/etc", str(self.dir / "etc")], check=True)
        (self.dir / "opt" / "dafka").symlink_to(sys.prefix)
        binds = [
            f'mount --bind "$1/{src}" {dst}'
            for src, dst in (
                ("etc", "/etc"),
                ("var-lib", "/var/lib"),
                ("var-log", "/var/log"),
                ("opt", "/opt"),
            )
        ]
        # the interpreter, the virtual environment or the checkout may live under /root
        # (pyenv): they stay where they are, reachable by the dafka user
        (self.dir / "root").chmod(0o711)
        for path in sorted(set(_under_root())):
            rel = path.relative_to("/root")
            (self.dir / "root" / rel).mkdir(parents=True, exist_ok=True)
            binds.append(f'mount --bind {path} "$1/root/{rel}"')
        binds.append('mount --rbind "$1/root" /root')
        mounts = " && ".join(binds)
        prefix = ["ip", "netns", "exec", ns, "sh", "-c", f'{mounts} && shift && exec "$@"']
        prefix += ["host-mounts", str(self.dir)]
        self.shell = dx.Session(
            dx.ROOT, {**env, "DEPLOY_TEST_RUN": str(self.run_dir)}, prefix, errexit=True
        )

    def run(self, code: str, timeout: float) -> str:
        """Run ``code``; its output. Raises :class:`dx.CommandFailed` if it fails."""
        mark = self.shell.mark()
        try:
            status, out = self.shell.run(code, timeout)
        except dx.CommandFailed as exc:
            self.shell.proc.poll()
            self.shell._reader.join(5)  # what it wrote before it ended
            raise dx.CommandFailed(
                f"{self.name}: {exc}\n{self.shell.since(mark)}\n{self.journal()}"
            ) from None
        if status != 0:
            raise dx.CommandFailed(f"{self.name}: exit status {status}\n{out}\n{self.journal()}")
        return out

    def journal(self, lines: int = 30) -> str:
        """The last lines each of this host's units wrote."""
        out = []
        for log in sorted(self.run_dir.glob("*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {self.name} {log.name}\n" + "\n".join(text))
        return "\n".join(out)

    def close(self) -> None:
        self.shell.close()


def _under_root() -> Iterator[Path]:
    for path in (sys.base_prefix, sys.prefix, dx.ROOT):
        real = Path(path).resolve()
        if real.is_relative_to("/root") and real != Path("/root"):
            yield real


def shim_bin(workdir: Path) -> Path:
    """A directory holding ``systemctl``: tests/deploy_systemctl.py."""
    bin_dir = workdir / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "systemctl"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m tests.deploy_systemctl "$@"\n')
    shim.chmod(0o755)
    return bin_dir


def host_env(workdir: Path) -> dict[str, str]:
    return {
        "PATH": f"{shim_bin(workdir)}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(dx.ROOT),
        "PYTHONUNBUFFERED": "1",
    }


def remove(paths: Iterable[Path]) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
