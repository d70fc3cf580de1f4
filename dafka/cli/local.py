"""``dafka-local``: a tower and a store on 127.0.0.1, the embedded local default.

``--metrics-port PORT`` serves the store's metrics on PORT and the tower's on PORT+1
(0: a free port for each), each announced on stderr as ``metrics on URL (store)`` and
``metrics on URL (tower)``, as ``dafka-store`` and ``tower`` announce theirs.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

import click

from tower.metadata import TowerNode, default_data_dir
from tower.metrics import tower_metrics

from ..config import TowerAddress, parse_endpoint
from ..errors import ConfigError, DafkaError
from ..io.metrics import NodeMetrics, check_metrics_port
from ..metadata.signing import (
    ADMIN_KEY_ENV,
    DEFAULT_ADMIN_KEY,
    create_admin_key,
    load_admin_key,
)
from ..storage.state_dir import make_data_dir
from ..store import Store
from .common import (
    CONTEXT,
    Command,
    common_options,
    profile_option,
    run_cli,
    wait_for_signal,
)
from .metrics import metrics_options, metrics_topic_cap_option

KAFKA_STATE_DIR = ".dafka/kafka"
KAFKA_START_TIMEOUT = 30.0
"""Seconds the Kafka listener child may take to listen."""


@click.command(cls=Command, context_settings=CONTEXT)
@common_options("local", node=False)
@profile_option
@click.option(
    "--data-dir",
    "-d",
    default=".dafka/store",
    show_default=True,
    type=click.Path(file_okay=False),
    help="The store's LMDB directory.",
)
@click.option(
    "--tower-bind",
    default="127.0.0.1:5556",
    show_default=True,
    help="HOST:PORT of the tower's beacon port (relay PORT+1, Raft PORT+2, broadcasts PORT+3).",
)
@click.option(
    "--tower-data-dir",
    default=None,
    type=click.Path(file_okay=False),
    help="The tower's metadata (Raft) directory (default: .dafka/tower-PORT).",
)
@click.option(
    "--admin-key",
    "admin_key_file",
    default=DEFAULT_ADMIN_KEY,
    show_default=True,
    envvar=ADMIN_KEY_ENV,
    type=click.Path(dir_okay=False),
    help="The local admin key file (made if missing); the metadata's first admin, and what "
    f"the dafka command signs with by default. [env: {ADMIN_KEY_ENV}]",
)
@click.option(
    "--kafka-port",
    default=None,
    type=click.IntRange(0, 65535),
    help="Also run the Kafka-protocol listener (dafka-kafka) on 127.0.0.1:PORT (0: a free "
    "port), as a child process; its state goes in .dafka/kafka (docs/kafka.md).",
)
@metrics_options
@metrics_topic_cap_option
@run_cli
def main(
    data_dir: str,
    tower_bind: str,
    tower_data_dir: str | None,
    profile: str,
    admin_key_file: str,
    kafka_port: int | None,
    metrics_port: int | None,
    metrics_host: str,
    metrics_topic_cap: int,
) -> None:
    """Run a local platform: one tower (beacons + metadata) and one store, until Ctrl-C.

    With --metrics-port PORT, the store's metrics are on PORT and the tower's on PORT+1."""
    host, port = parse_endpoint(tower_bind, "tower address", allow_zero=True)
    store_port, tower_port = metrics_ports(metrics_port)
    address = TowerAddress(host, port)
    tower_dir = tower_data_dir or default_data_dir(port)
    make_data_dir(tower_dir, "tower data directory")  # one line, not the Raft thread's traceback
    path = Path(admin_key_file)
    exists = path.exists() or path.is_symlink()
    admin = load_admin_key(path) if exists else create_admin_key(path)
    tower = TowerNode(
        address,
        data_dir=tower_dir,
        admin_keys=[admin.public_key.hex()],
    ).start()
    address = tower.address
    tower_metrics_server: NodeMetrics | None = None
    try:
        if tower_port is not None:  # a busy port: one error line, the tower stopped
            tower_metrics_server = tower_metrics(tower).serve(metrics_host, tower_port)
        store = Store(
            data_dir,
            towers=str(address),
            host=host,
            profile=profile,
            metrics_port=store_port,
            metrics_host=metrics_host,
            metrics_topic_cap=metrics_topic_cap,
        ).start()
    except BaseException:
        if tower_metrics_server is not None:
            tower_metrics_server.close()
        tower.stop()
        raise
    kafka: KafkaChild | None = None
    if kafka_port is not None:
        try:
            kafka = KafkaChild(str(address), host, kafka_port, str(path))
        except BaseException:
            store.stop()
            if tower_metrics_server is not None:
                tower_metrics_server.close()
            tower.stop()
            raise
    t = "" if str(address) == "127.0.0.1:5556" else f" -t {address}"
    if profile != "signed":
        t += f" --profile {profile}"
    signing = "" if admin_key_file == DEFAULT_ADMIN_KEY else f" --admin-key {path}"
    trust = (
        "(producers count ACKs from any store until the cluster trusts some: "
        f".venv/bin/dafka stores trust {store.node_id}{t.split(' --profile')[0]}{signing})\n"
        if profile == "signed"
        else ""
    )
    if admin.public_key.hex() not in tower.sm.admins:
        click.echo(
            f"warning: {path} is not an admin of the metadata in {tower.data_dir} (its admins: "
            f"{', '.join(tower.sm.admins) or 'none yet'}); dafka changes signed with it are refused",
            err=True,
        )
    if kafka is not None:
        click.echo(f"Kafka listener on {kafka.endpoint} (kcat -b {kafka.endpoint} -L)", err=True)
    for role, metrics in (("store", store.metrics), ("tower", tower_metrics_server)):
        if metrics is not None and metrics.url is not None:
            click.echo(f"metrics on {metrics.url} ({role})", err=True)
    click.echo(
        f"Dafka is running: tower on {address.sub} and {address.pub} "
        f"(metadata on {tower.raft_url}), "
        f"store {store.node_id} ({profile} profile) with data in {store.path}\n"
        f"admin key {path} (public {admin.public_key.hex()}): the dafka command signs "
        "metadata changes with it\n"
        "In another terminal, try:\n"
        f"  seq 5 | .venv/bin/dafka-producer hello{t}\n"
        f"  .venv/bin/dafka-consumer hello --from-beginning -e{t}\n"
        f"  .venv/bin/dafka topics list{t.split(' --profile')[0]}\n"
        f"{trust}"
        "Ctrl-C stops it.",
        err=True,
    )

    def check() -> None:
        check_nodes(store, tower)
        if kafka is not None:
            kafka.check()

    try:
        wait_for_signal(check)
    finally:
        if kafka is not None:
            kafka.stop()
        store.stop()
        if tower_metrics_server is not None:
            tower_metrics_server.close()
        tower.stop()


class KafkaChild:
    """``dafka-kafka`` as a child process of ``dafka-local`` (its stderr is ours)."""

    def __init__(self, towers: str, host: str, port: int, admin_key: str) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dafka.cli.kafka",
                "--tower",
                towers,
                "--host",
                host,
                "--port",
                str(port),
                "--admin-key",
                admin_key,
                "--state-dir",
                KAFKA_STATE_DIR,
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        self.endpoint = ""
        self._listening = threading.Event()
        threading.Thread(target=self._relay, daemon=True).start()
        self._listening.wait(KAFKA_START_TIMEOUT)
        if not self.endpoint:
            self.stop()
            raise DafkaError(f"the Kafka listener did not start (exit {self.proc.returncode})")

    def _relay(self) -> None:
        """Copy the child's stderr to ours, noting the port it listens on."""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            sys.stderr.write(line)
            if not self.endpoint:
                m = re.search(r"% kafka listening on (\S+)", line)
                if m:
                    self.endpoint = m.group(1)
                    self._listening.set()
        self._listening.set()

    def check(self) -> None:
        if self.proc.poll() is not None:
            raise DafkaError(
                f"the Kafka listener exited {self.proc.returncode} (see the log above)"
            )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def check_nodes(store: Store, tower: TowerNode) -> None:
    """Raise if the store's IO thread, the tower's beacon relay or its metadata peer has
    stopped: a dead node must not leave a live-looking platform (the command then exits 1
    with the reason)."""
    if not store.alive:
        raise DafkaError("the store's IO thread stopped (see the log above)")
    if not tower.running:
        raise tower.failure()


def metrics_ports(port: int | None) -> tuple[int | None, int | None]:
    """The store's and the tower's metrics ports for ``--metrics-port PORT``: PORT and
    PORT+1 (0: a free port each; None: no endpoint)."""
    check_metrics_port(port)
    if port is None:
        return None, None
    if port == 0:
        return 0, 0
    if port >= 65535:
        raise ConfigError(
            f"bad metrics port {port}: dafka-local serves the tower's metrics on PORT+1, "
            "so give 0 (free ports) to 65534"
        )
    return port, port + 1


if __name__ == "__main__":
    main()
