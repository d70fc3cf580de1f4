"""``--metrics-port`` on the commands as a user runs them: the endpoint line, the
settings from the environment and the TOML file, and one-line errors."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.test_cli import assert_one_line_error, consumer, producer
from tests.procs import Proc, StoreProc, Tower, py

pytestmark = pytest.mark.e2e

URL = r"metrics on (http://127\.0\.0\.1:\d+/metrics)"
LOCAL = [
    "dafka.cli.local",
    "--tower-bind",
    "127.0.0.1:0",
    "--data-dir",
    "{tmp}/db",
    "--tower-data-dir",
    "{tmp}/tower",
    "--admin-key",
    "{tmp}/admin.key",
]


@pytest.fixture
def platform(tmp_path: Path):
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    yield tower
    store.kill()
    tower.stop()


def roles(url: str) -> set[str]:
    with urllib.request.urlopen(url, timeout=5) as reply:
        text = reply.read().decode()
    return {
        s.labels["role"]
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "dafka_node_info"
    }


def test_clients_serve_metrics_only_when_asked(platform: Tower) -> None:
    p = producer(platform.address, "m", b"a\nb\n", "--metrics-port", "0")
    url = p.wait_line(URL).group(1)
    assert p.wait() == 0, p.stderr
    assert "2 records acknowledged" in p.stderr
    plain = producer(platform.address, "m", b"c\n")
    assert plain.wait() == 0 and "metrics on" not in plain.stderr
    c = consumer(platform.address, "m", "--from-beginning", "-c", "4", "--metrics-port", "0")
    url = c.wait_line(URL).group(1)
    c.wait_line_stdout("(?s)(.*\n){3}")  # a, b, c: two producers, two partitions, any order
    assert roles(url) == {"consumer"}  # it waits for a fourth record: still serving
    assert producer(platform.address, "m", b"d\n").wait() == 0
    assert c.wait() == 0, c.stderr
    assert sorted(bytes(c.stdout).splitlines()) == [b"a", b"b", b"c", b"d"]


def test_store_metrics_port_from_env_and_config_file(platform: Tower, tmp_path: Path) -> None:
    conf = tmp_path / "dafka.toml"
    conf.write_text('[store]\nmetrics-port = 0\nmetrics-host = "127.0.0.1"\n')
    from_file = StoreProc(tmp_path / "s1", platform.address, "--config", str(conf))
    from_env = Proc(
        py("dafka.cli.store", "--data-dir", str(tmp_path / "s2"), "--tower", platform.address),
        env={"DAFKA_METRICS_PORT": "0"},
    )
    try:
        assert roles(from_file.proc.wait_line(URL).group(1)) == {"store"}
        assert roles(from_env.wait_line(URL).group(1)) == {"store"}
    finally:
        from_file.kill()
        from_env.kill()


def test_busy_metrics_port_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        s = Proc(
            py(
                "dafka.cli.store",
                "--data-dir",
                str(tmp_path / "db"),
                "--metrics-port",
                str(port),
            )
        )
        assert_one_line_error(s, 2, f"cannot serve metrics on 127.0.0.1:{port}")


@pytest.mark.parametrize(
    "command",
    [
        ["dafka.cli.store", "--data-dir", "{tmp}/db"],
        ["tower", "--bind", "127.0.0.1:0", "--data-dir", "{tmp}/tower"],
        ["dafka.cli.consumer", "t"],
        LOCAL,
    ],
    ids=["store", "tower", "consumer", "local"],
)
def test_bad_metrics_port_is_one_line(command: list[str], tmp_path: Path) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    p = Proc(py(*args, "--metrics-port", "70000"))
    assert_one_line_error(p, 2, "bad metrics port 70000")


def _two_free_ports() -> int:
    """A port P with P+1 free too (free when this returns: the test binds them soon after)."""
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            if port >= 65535:
                continue
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
                return port
    raise AssertionError("no two consecutive free ports")


def local(tmp_path: Path, *args: str) -> Proc:
    return Proc(py(*[a.replace("{tmp}", str(tmp_path)) for a in LOCAL], *args))


def test_local_serves_the_store_metrics_on_the_port_and_the_tower_on_the_next(
    tmp_path: Path,
) -> None:
    port = _two_free_ports()
    p = local(tmp_path, "--metrics-port", str(port))
    try:
        store_url = p.wait_line(r"metrics on (\S+) \(store\)").group(1)
        tower_url = p.wait_line(r"metrics on (\S+) \(tower\)").group(1)
        assert store_url == f"http://127.0.0.1:{port}/metrics"
        assert tower_url == f"http://127.0.0.1:{port + 1}/metrics"
        assert roles(store_url) == {"store"} and roles(tower_url) == {"tower"}
        assert not bytes(p.stdout)  # startup lines on stderr
        assert p.terminate() == 0
    finally:
        p.kill()
    free = local(tmp_path, "--metrics-port", "0")  # 0: a free port for each
    try:
        urls = [
            free.wait_line(rf"metrics on {URL[len('metrics on ') :]} \({r}\)").group(1)
            for r in ("store", "tower")
        ]
        assert len(set(urls)) == 2
        assert roles(urls[0]) == {"store"} and roles(urls[1]) == {"tower"}
        assert free.terminate() == 0
    finally:
        free.kill()
    plain = local(tmp_path)
    try:
        plain.wait_line(r"Dafka is running")
        assert "metrics on" not in plain.stderr
    finally:
        plain.kill()


def test_local_metrics_port_errors_are_one_line(tmp_path: Path) -> None:
    top = local(tmp_path, "--metrics-port", "65535")  # no PORT+1 for the tower
    assert_one_line_error(top, 2, "bad metrics port 65535")
    port = _two_free_ports()
    with socket.socket() as busy:  # the tower's port (PORT+1) is taken
        busy.bind(("127.0.0.1", port + 1))
        busy.listen()
        p = local(tmp_path, "--metrics-port", str(port))
        assert_one_line_error(p, 2, f"cannot serve metrics on 127.0.0.1:{port + 1}")
