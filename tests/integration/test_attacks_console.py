"""Attacks on ``dafka console`` over HTTP, against real processes: a tower, a store and two
consoles (one with the admin key, one read-only; tests/console_cluster.py).

Each defence of dafka/console/web.py and render.py has a test here that fails without it
(mutants in tests/attack_mutants.py): DNS rebinding (a foreign Host header), a cross-site
form post (no XSRF token), a change on a read-only console, peer bytes rendered as HTML,
an unbounded record page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

import pytest

from dafka.console.render import MAX_PAGE
from dafka.metadata.client import MetadataClient
from tests.console_cluster import (
    XSS_HEADER,
    XSS_VALUE,
    ConsoleCluster,
    request,
    start,
    xsrf,
)
from tests.e2e.test_cli import assert_one_line_error
from tests.procs import Proc, py

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleCluster]:
    c = start(Path(tmp_path_factory.mktemp("console")))
    try:
        yield c
    finally:
        c.stop()


def topics(c: ConsoleCluster) -> dict:
    with MetadataClient(c.tower.address, timeout=10) as client:
        return client.topics()


def test_a_foreign_host_header_is_refused(cluster: ConsoleCluster) -> None:
    """A DNS-rebinding page reaches 127.0.0.1 under its own name: refused."""
    for path in ("/", "/topics", "/metrics"):
        assert request(cluster.admin_url, path).status == 200
        got = request(cluster.admin_url, path, host="rebind.evil.example:80")
        assert got.status == 421, (path, got.status)
        assert (
            "dafka_partition_stores" not in got.body and "web" not in got.body.split("</nav>")[-1]
        )


def test_a_cross_site_form_post_is_refused(cluster: ConsoleCluster) -> None:
    """A form on another site posts to the admin console with the admin's browser: it has
    no XSRF token (nor, cross-site, the cookie), so no change is signed."""
    body = urlencode({"name": "csrf-made-this"})
    got = request(cluster.admin_url, "/topics/create", method="POST", body=body)
    assert got.status == 403 and "_xsrf" in got.body
    cookie, _ = xsrf(cluster.admin_url)  # even with the cookie, the form needs the token
    got = request(
        cluster.admin_url, "/topics/create", method="POST", body=body, headers={"Cookie": cookie}
    )
    assert got.status == 403
    assert "csrf-made-this" not in topics(cluster)


def test_a_read_only_console_signs_nothing(cluster: ConsoleCluster) -> None:
    """The environment holds the suite's admin key ($DAFKA_ADMIN_KEY), which the other
    dafka commands sign with by default: the console without --admin-key must not."""
    cookie, token = xsrf(cluster.read_only_url)
    body = urlencode({"_xsrf": token, "name": "read-only-made-this"})
    got = request(
        cluster.read_only_url,
        "/topics/create",
        method="POST",
        body=body,
        headers={"Cookie": cookie},
    )
    assert got.status == 403, got.body[-500:]
    assert "read-only console" in got.body and "Traceback" not in got.body
    assert "read-only-made-this" not in topics(cluster)


def test_peer_bytes_render_as_text(cluster: ConsoleCluster) -> None:
    q = urlencode({"topic": "web", "partition": cluster.partition, "offset": 0, "limit": 5})
    got = request(cluster.admin_url, f"/records?{q}")
    assert got.status == 200
    assert "<script>window.__xss" not in got.body and "<img src=x" not in got.body
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in got.body
    assert XSS_VALUE not in got.body and XSS_HEADER not in got.body
    assert "not UTF-8: shown as hex" in got.body  # the key b"\xff\xfe\x00k"


def test_a_record_page_is_bounded_however_many_are_asked(cluster: ConsoleCluster) -> None:
    q = urlencode({"topic": "web", "partition": cluster.partition, "offset": 0, "limit": 10**6})
    got = request(cluster.admin_url, f"/records?{q}")
    assert got.status == 200
    assert got.body.count('<td class="value">') == MAX_PAGE
    assert "truncated: the first 4096 of 100000 bytes" in got.body  # the huge record


@pytest.mark.parametrize(
    ("path", "status", "line"),
    [
        ("/topic?name=no-such-topic", 404, "unknown topic"),
        ("/topic?name=%FF%FE", 400, "Invalid unicode"),
        ("/records?topic=web&partition=P&offset=-1", 400, "bad offset"),
        ("/records?topic=web&partition=P&offset=99999999999999999999999", 400, "bad offset"),
        ("/records?topic=nope&partition=P&offset=0", 400, "no store holds partition"),
        ("/records?topic=web&partition=P&time=tomorrow", 400, "bad time"),
        ("/group?name=" + quote("x" * 1000), 400, "too long"),
        ("/no/such/page", 404, "no page at"),
    ],
)
def test_bad_input_is_a_one_line_error_page(
    cluster: ConsoleCluster, path: str, status: int, line: str
) -> None:
    got = request(cluster.admin_url, path)
    assert got.status == status, (path, got.status, got.body[-400:])
    assert line in got.body and "Traceback" not in got.body
    assert got.body.count('class="error"') == 1


def test_console_mistakes_are_one_line_and_exit_2(cluster: ConsoleCluster, tmp_path: Path) -> None:
    taken = urlsplit(cluster.admin_url).port
    t = cluster.tower.address
    cases = [
        (("--bind", "nonsense"), "bad --bind 'nonsense'"),
        (("--admin-key", str(tmp_path / "none.key")), "no admin key at"),
        (("--bind", f"127.0.0.1:{taken}"), "cannot bind the console to 127.0.0.1"),
    ]
    procs = [(Proc(py("dafka.cli.admin", "console", "--tower", t, *a)), f) for a, f in cases]
    for proc, fragment in procs:
        assert_one_line_error(proc, 2, fragment)
