"""Nodes as separate hosts: one network namespace per node, joined by a bridge (root only).

Every namespace, link and address is created here and deleted by :meth:`Topology.destroy`;
nothing is added to the namespace the suite was started in. A hub namespace holds a
bridge; each node namespace is joined to it by a veth pair and has its own address in
``10.213.0.0/24``. A partition between two groups of nodes is a set of blackhole routes
in both groups' namespaces (packets silently dropped, as on a cut link), removed to heal.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import shutil
import signal
import subprocess
from collections.abc import Iterable, Mapping, Sequence

log = logging.getLogger(__name__)

SUBNET = ipaddress.ip_network("10.213.0.0/24")


def unavailable() -> str | None:
    """Why namespaces cannot be used here (None: they can)."""
    if os.geteuid() != 0:
        return "not root: network namespaces need CAP_SYS_ADMIN"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is missing"
    return None


def _ip(*args: str, stdin: str | None = None) -> None:
    proc = subprocess.run(["ip", *args], input=stdin, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {proc.stderr.strip()}")


class Topology:
    """Namespaces ``<prefix>-<node>`` on a bridge in ``<prefix>-hub``."""

    def __init__(
        self,
        nodes: Sequence[str],
        prefix: str | None = None,
        addresses: Mapping[str, str] | None = None,
        subnet: ipaddress.IPv4Network = SUBNET,
    ) -> None:
        """``addresses``: each node's address in ``subnet`` (default: the first ones, in
        order), e.g. the addresses a deployment guide names."""
        if len(nodes) + 2 > subnet.num_addresses - 2:
            raise ValueError("too many nodes for the subnet")
        self.prefix = prefix or f"dfk{os.getpid()}"
        self.hub = f"{self.prefix}-hub"
        self.subnet = subnet
        hosts = list(subnet.hosts())
        self.addresses = {name: str(hosts[i + 1]) for i, name in enumerate(nodes)}
        if addresses is not None:
            if set(addresses) != set(nodes):
                raise ValueError("addresses must name every node, and only them")
            if any(ipaddress.ip_address(a) not in subnet for a in addresses.values()):
                raise ValueError(f"an address outside {subnet}")
            self.addresses = dict(addresses)
        self.cuts: set[tuple[str, str]] = set()
        self.created: list[str] = []

    def ns(self, node: str) -> str:
        return f"{self.prefix}-{node}"

    def create(self) -> None:
        try:
            _ip("netns", "add", self.hub)
            self.created.append(self.hub)
            _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.hub, "link", "set", "br0", "up")
            _ip("-n", self.hub, "link", "set", "lo", "up")
            for i, (node, addr) in enumerate(self.addresses.items()):
                ns = self.ns(node)
                _ip("netns", "add", ns)
                self.created.append(ns)
                port = f"v{i}"
                _ip(
                    "-n", self.hub, "link", "add", port, "type", "veth", "peer", "eth0", "netns", ns
                )
                _ip("-n", self.hub, "link", "set", port, "master", "br0", "up")
                _ip("-n", ns, "link", "set", "lo", "up")
                _ip("-n", ns, "addr", "add", f"{addr}/{self.subnet.prefixlen}", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
        except BaseException:
            self.destroy()
            raise

    def prefix_args(self, node: str) -> list[str]:
        """The command prefix that runs a program in ``node``'s namespace."""
        return ["ip", "netns", "exec", self.ns(node)]

    def cut(self, side_a: Iterable[str], side_b: Iterable[str]) -> None:
        """Drop every packet between the two groups (both directions)."""
        a, b = list(side_a), list(side_b)
        for src, dsts in ((a, b), (b, a)):
            for node in src:
                fresh = [d for d in dsts if (node, d) not in self.cuts]
                lines = "".join(f"route add blackhole {self.addresses[d]}/32\n" for d in fresh)
                if lines:
                    _ip("-n", self.ns(node), "-batch", "-", stdin=lines)
                self.cuts.update((node, d) for d in fresh)

    def heal(self) -> None:
        """Remove every cut."""
        by_node: dict[str, list[str]] = {}
        for node, dst in self.cuts:
            by_node.setdefault(node, []).append(dst)
        for node, dsts in by_node.items():
            lines = "".join(f"route del blackhole {self.addresses[d]}/32\n" for d in dsts)
            _ip("-n", self.ns(node), "-batch", "-", stdin=lines)
        self.cuts.clear()

    def destroy(self) -> None:
        """Kill what still runs in the namespaces made here, then delete them."""
        for ns in self.created:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            for pid in pids.stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        for ns in reversed(self.created):
            proc = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True)
            if proc.returncode != 0:
                log.warning("faults.netns.delete_failed ns=%s error=%s", ns, proc.stderr.strip())
        self.created.clear()
