"""docs/deploy.md works as written (issue 38, point 4): every runnable block of the guide runs
on its hosts, each host a network namespace with the guide's own address, and the cluster it
builds does what the guide says.

How the hosts are made and what the test sets in them: tests/deploy_guide.py. The daemons are
started from deploy/systemd/'s units with deploy/config/'s files, by tests/deploy_systemctl.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests import deploy_guide as dg
from tests import docs_examples as dx
from tests.faults import netns
from tests.tools import require_tool

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(150),
    pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable())),
]

BLOCK_TIMEOUT = 90.0


class Deployment:
    def __init__(self, workdir: Path) -> None:
        self.guide = dg.load()
        self.topo = netns.Topology(
            list(dg.HOSTS),
            prefix=f"dpl{os.getpid() % 100000}",
            addresses={h: self.guide.address(h) for h in dg.HOSTS},
            subnet=dg.SUBNET,
        )
        self.workdir = workdir
        self.hosts: dict[str, dg.Host] = {}
        self.printed: dict[str, dict[str, str]] = {}
        self.copied: set[str] = set()
        self.log: list[str] = []

    def start(self) -> None:
        self.topo.create()
        env = dg.host_env(self.workdir)
        for name in dg.HOSTS:
            host = dg.Host(name, self.topo.ns(name), self.workdir, env)
            self.hosts[name] = host
            host.run(self.guide.host_exports[name], 10)  # the guide's table, as written

    def run_guide(self) -> None:
        for step in self.guide.steps:
            wanted = [v for v in dg.COPIED if v not in self.copied and f"${v}" in step.block.text]
            if wanted:
                self.copy_keys(wanted)
            # the hosts of a step at once, as an operator with a terminal on each would
            with ThreadPoolExecutor(len(step.hosts)) as pool:
                outs = list(pool.map(self._run_step, [step] * len(step.hosts), step.hosts))
            for name, out in zip(step.hosts, outs, strict=True):
                self.printed.setdefault(name, {}).update(dg.printed(out))
                for expected in dx._PRINTS.findall(step.block.text):
                    assert dx._normal(expected) in dx._normal(out), (
                        f"{step.block.where} on {name}: did not print {expected!r}:\n{out}"
                    )

    def _run_step(self, step: dg.Step, name: str) -> str:
        started = time.monotonic()
        try:
            out = self.hosts[name].run(step.block.text, BLOCK_TIMEOUT)
        except dx.CommandFailed as exc:
            raise dx.CommandFailed(f"{step.block.where} on {exc}") from None
        self.log.append(f"{step.block.where} on {name} ({time.monotonic() - started:.1f} s)\n{out}")
        return out

    def copy_keys(self, wanted: list[str]) -> None:
        """What the guide says to copy to every host, from what each host printed: the
        first time a block needs one, all those printed by then (as the guide's export lines
        say them together), else those the block needs."""
        if not self.copied:
            wanted = [v for v, (h, what) in dg.COPIED.items() if what in self.printed.get(h, {})]
        values = {}
        for var in wanted:
            host, what = dg.COPIED[var]
            values[var] = self.printed.get(host, {}).get(what)
            assert values[var], f"{host} printed no {what} before {var} was needed"
        line = "export " + " ".join(f"{k}={v}" for k, v in values.items())
        for host in self.hosts.values():
            host.run(line, 10)
        self.copied.update(values)

    def run(self, host: str, code: str, timeout: float = 30.0) -> str:
        return self.hosts[host].run(code, timeout)

    def close(self) -> None:
        for host in self.hosts.values():
            host.close()
        self.topo.destroy()

    def journals(self) -> str:
        return "\n".join(h.journal() for h in self.hosts.values())


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    require_tool("kcat", "kcat")  # the guide's Kafka listener section runs it
    deployment = Deployment(tmp_path_factory.mktemp("deploy"))
    started = time.monotonic()
    try:
        deployment.start()
        try:
            deployment.run_guide()
        except (dx.CommandFailed, AssertionError) as exc:
            pytest.fail(
                f"{exc}\n\n--- the guide so far ---\n"
                + "\n".join(deployment.log[-12:])
                + "\n\n--- journals ---\n"
                + deployment.journals(),
                pytrace=False,
            )
        deployment.log.append(f"the guide ran in {time.monotonic() - started:.1f} s")
        yield deployment
    finally:
        deployment.close()
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert deployment.topo.prefix + "-" not in listed


def test_three_towers_elect_a_leader_that_knows_the_admin(deployed: Deployment) -> None:
    status = json.loads(deployed.run("admin", 'dafka cluster status --json --tower "$TOWERS"'))
    peers = status["peers"]
    assert [p["state"] for p in peers] == ["up"] * 3, peers
    assert sum(p["is_leader"] for p in peers) == 1, peers
    assert len({p["applied"] for p in peers}) == 1, peers
    assert status["settings"]["curve"] is True, status["settings"]
    admins = deployed.run("admin", 'dafka admins list --tower "$TOWERS"').split()
    assert admins == [deployed.printed["admin"]["public_key"]]


def test_three_trusted_stores_hold_every_record(deployed: Deployment) -> None:
    rows = [
        json.loads(line)
        for line in deployed.run("admin", 'dafka stores list --json --tower "$TOWERS"').splitlines()
    ]
    ids = {deployed.printed[s]["node_id"] for s in dg.STORES}
    assert {r["store"] for r in rows if r["trusted"]} == ids, rows
    orders = []
    for row in rows:
        events = [(h["topic"], h["low"], h["high"]) for h in row["holds"] if h["topic"] == "events"]
        assert events == [("events", 0, 2000)]
        orders.append(sum(h["high"] - h["low"] for h in row["holds"] if h["topic"] == "orders"))
    # the Kafka listener's 100 records (3 partitions, min_acks 2): at least two stores hold all
    assert sorted(orders)[-2:] == [100, 100] and max(orders) == 100, orders


def test_the_consumer_reads_every_record_the_producer_sent(deployed: Deployment) -> None:
    out = deployed.run(
        "app",
        'dafka-consumer events --config /etc/dafka/client.toml --tower "$TOWERS" --host "$ME" '
        "-o beginning -e | sort -n | uniq | awk '{s += $1} END {print NR, s}'",
    )
    assert out.split() == ["2000", str(sum(range(1, 2001)))], out


def test_the_daemons_run_as_dafka_and_a_null_client_reads_nothing(deployed: Deployment) -> None:
    for host, unit in (("tower1", "dafka-tower"), ("store1", "dafka-store")):
        owner = deployed.run(host, f'stat -c %U /proc/$(cat "$DEPLOY_TEST_RUN/{unit}.service.pid")')
        assert owner.strip() == "dafka", (host, owner)
    out = deployed.run(
        "app",
        'status=0; dafka-consumer events --tower "$TOWER1:5556" --host "$ME" -o beginning -e '
        "--wait 1 2>&1 | tail -3 || status=$?; echo status=$status",
    )
    assert "status=1" in out and "\n1\n" not in f"\n{out}", out
