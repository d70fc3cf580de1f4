"""Attacks on ``dafka console`` over HTTP, against real processes: a tower, a store and two
consoles (one with the admin key, one read-only; tests/console_cluster.py).

Each defence of dafka/console/web.py and render.py has a test here that fails without it
(mutants in tests/attack_mutants.py): DNS rebinding (a foreign Host header), a cross-site
form post (no XSRF token), a change on a read-only console, peer bytes rendered as HTML,
an unbounded record page."""

from __future__ import annotations

import html
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

import pytest

from dafka.console.render import MAX_OFFSET, MAX_PAGE
from dafka.metadata.client import MetadataClient
from tests.console_cluster import (
    XSS_HEADER,
    XSS_VALUE,
    ConsoleCluster,
    origin,
    post,
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
    fields = {"name": "csrf-made-this"}
    got = post(cluster.admin_url, "/topics/create", fields)
    assert got.status == 403 and "_xsrf" in got.body
    cookie, _ = xsrf(cluster.admin_url)  # even with the cookie, the form needs the token
    got = post(cluster.admin_url, "/topics/create", fields, cookie=cookie)
    assert got.status == 403
    assert "csrf-made-this" not in topics(cluster)


def test_a_read_only_console_signs_nothing(cluster: ConsoleCluster) -> None:
    """The environment holds the suite's admin key ($DAFKA_ADMIN_KEY), which the other
    dafka commands sign with by default: the console without --admin-key must not."""
    cookie, token = xsrf(cluster.read_only_url)
    fields = {"_xsrf": token, "name": "read-only-made-this"}
    got = post(cluster.read_only_url, "/topics/create", fields, cookie=cookie)
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
        ("/nope%3Cscript%3E", 404, "no page at /nope%3Cscript%3E<"),
        ("/topic?name=%25", 404, "unknown topic '%'<"),
        ("/records?topic=web&partition=P&limit=-5", 400, "bad limit '-5': a whole number from 1"),
        ("/records?topic=web&partition=P&limit=0", 400, "bad limit '0'"),
        ("/records?topic=web&partition=P&offset=3&time=4", 400, "give offset= or time=, not both"),
        (f"/records?topic=web&partition=P&offset={2**64 - 1}", 400, f"to {MAX_OFFSET}"),
        ("/topic?name=a%01b", 400, "holds a control character"),
    ],
)
def test_bad_input_is_a_one_line_error_page(
    cluster: ConsoleCluster, path: str, status: int, line: str
) -> None:
    got = request(cluster.admin_url, path)
    assert got.status == status, (path, got.status, got.body[-400:])
    shown = html.unescape(got.body)
    assert line in shown and "Traceback" not in shown and "%%" not in shown
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


def test_a_forged_or_borrowed_form_token_is_refused(cluster: ConsoleCluster) -> None:
    """The token is an HMAC of the browser's id cookie under the console's own secret: a
    pair made by setting a cookie (a page on another port of 127.0.0.1 can: cookies ignore
    ports), or a read-only console's pair, is refused; the console's own pair works."""
    url = cluster.admin_url
    forged = [
        ("dafka_console_id=" + "a" * 32, "a" * 32),
        ("_xsrf=abc", "abc"),
        ("dafka_console_id=abc; _xsrf=abc", "abc"),
        xsrf(cluster.read_only_url),  # another console's token
    ]
    for i, (cookie, token) in enumerate(forged):
        got = post(url, "/topics/create", {"_xsrf": token, "name": f"forged{i}"}, cookie=cookie)
        assert got.status == 403 and "not this console's" in html.unescape(got.body), cookie
    cookie, token = xsrf(url)
    got = post(
        url, "/topics/create", {"_xsrf": token, "name": "own-token-made-this"}, cookie=cookie
    )
    assert got.status == 200, got.body[-300:]
    made = topics(cluster)
    assert "own-token-made-this" in made and not any(f"forged{i}" in made for i in range(4))


def test_a_post_from_another_origin_is_refused(cluster: ConsoleCluster) -> None:
    """With the console's own cookie and token (a page cannot read them, but the check must
    not lean on that alone): a POST whose Origin, or Referer without one, is not the
    console's is refused, as is one with neither."""
    url = cluster.admin_url
    port = urlsplit(url).port
    cookie, token = xsrf(url)
    bad = [
        {"Origin": "http://evil.example"},
        {"Origin": f"http://127.0.0.1:{port + 1}"},  # another port: another site's page
        {"Origin": "null"},
        {"Origin": "", "Referer": "http://evil.example/x"},
        {"Origin": "", "Referer": f"http://127.0.0.1.evil.example:{port}/topics"},
        {"Origin": ""},  # neither
    ]
    for i, headers in enumerate(bad):
        fields = {"_xsrf": token, "name": f"cross-origin{i}"}
        got = post(url, "/topics/create", fields, cookie=cookie, headers=headers)
        assert got.status == 403 and "the console's page" in html.unescape(got.body), headers
        assert got.body.count('class="error"') == 1
    fields = {"_xsrf": token, "name": "referer-made-this"}
    got = post(
        url,
        "/topics/create",
        fields,
        cookie=cookie,
        headers={"Origin": "", "Referer": origin(url) + "/topics"},
    )
    assert got.status == 200, got.body[-300:]
    made = topics(cluster)
    assert "referer-made-this" in made and not any(f"cross-origin{i}" in made for i in range(6))


def _raw(url: str, head: bytes) -> bytes:
    where = urlsplit(url)
    with socket.create_connection((where.hostname, where.port), timeout=10) as s:
        s.sendall(head)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def test_the_host_header_is_read_strictly(cluster: ConsoleCluster) -> None:
    url = cluster.admin_url
    port = urlsplit(url).port
    assert request(url, "/topics", host=f"LocalHost:{port}").status == 200
    for host in (
        "[::1]evil",
        "localhost:abc",
        "lOcAlHoSt:99999",
        f"localhost:{port + 1}",
        "0.0.0.0",
    ):
        assert request(url, "/topics", host=host).status == 421, host
    cookie, token = xsrf(url)
    got = post(
        url,
        "/topics/create",
        {"_xsrf": token, "name": "rebound-made-this"},
        cookie=cookie,
        host="[::1]evil",
        headers={"Origin": "http://[::1]evil"},
    )
    assert got.status == 421
    assert "rebound-made-this" not in topics(cluster)
    answer = _raw(url, b"GET /topics HTTP/1.0\r\n\r\n")  # no Host at all
    assert answer.split(b" ", 2)[1] == b"400" and b"no Host header" in answer


def test_form_fields_with_control_characters_or_out_of_range_are_refused(
    cluster: ConsoleCluster,
) -> None:
    """Tornado makes a control character a space (a%00b would create "a b"): refused."""
    url = cluster.admin_url
    cookie, token = xsrf(url)
    for fields, line in [
        ({"name": "a\x00b"}, "holds a control character"),
        ({"name": "ctl", "retention_ms": "7d\x1b"}, "holds a control character"),
        ({"name": "acks", "min_acks": "1000"}, "a whole number from 1 to 16"),
    ]:
        got = post(url, "/topics/create", {"_xsrf": token, **fields}, cookie=cookie)
        assert got.status == 400 and line in got.body, (fields, got.status, got.body[-300:])
    made = topics(cluster)
    assert not {"a b", "a\x00b", "ctl", "acks"} & set(made)


def test_a_groups_topic_is_not_deleted(cluster: ConsoleCluster) -> None:
    """A __group.* topic keeps a group's commits (the Kafka listener refuses too)."""
    name = "__group.victim"
    with MetadataClient(cluster.tower.address, timeout=10) as client:
        client.create_topic(name)
    cookie, token = xsrf(url := cluster.admin_url)
    got = post(
        url, "/topics/delete", {"_xsrf": token, "name": name, "confirm": name}, cookie=cookie
    )
    assert got.status == 403 and "keeps a group's commits" in html.unescape(got.body)
    assert name in topics(cluster)


def test_a_time_after_the_newest_record_is_an_empty_page(cluster: ConsoleCluster) -> None:
    q = urlencode({"topic": "web", "partition": cluster.partition, "time": "9999999999999"})
    got = request(cluster.admin_url, f"/records?{q}")
    assert got.status == 200, got.body[-400:]
    assert '<td class="value">' not in got.body and "no record at or after" in got.body


def test_a_reset_form_is_refused_without_a_token_read_only_or_with_bad_fields(
    cluster: ConsoleCluster,
) -> None:
    """The reset form (issue 38) is a change like the others: no token, no reset; a
    read-only console, no reset; bad fields, one line and no reset. The group topic's
    reset setting stays unset throughout."""
    name = "__group.resetme"
    with MetadataClient(cluster.tower.address, timeout=10) as client:
        client.create_topic(name)
    fields = {"group": "resetme", "to": "earliest", "topic": "web", "execute": "1"}
    assert post(cluster.admin_url, "/groups/reset", fields).status == 403
    cookie, token = xsrf(cluster.read_only_url)
    got = post(cluster.read_only_url, "/groups/reset", {**fields, "_xsrf": token}, cookie=cookie)
    assert got.status == 403 and "read-only console" in got.body
    cookie, token = xsrf(cluster.admin_url)
    for bad, why in (
        ({"to": "banana"}, "bad reset 'banana'"),
        ({"to": "offset", "value": "-1"}, "needs a number >= 0"),
        ({"to": "shift", "value": "1e9"}, "needs a whole number"),
        ({"to": "datetime", "value": "yesterday"}, "bad time"),
        ({"topic": "we\x01b"}, "control character"),
    ):
        got = post(
            cluster.admin_url, "/groups/reset", {**fields, **bad, "_xsrf": token}, cookie=cookie
        )
        assert got.status == 400 and why in html.unescape(got.body), (bad, got.body[-400:])
        assert "Traceback" not in got.body
    with MetadataClient(cluster.tower.address, timeout=10) as client:
        assert "reset_offsets" not in client.describe(name)


def test_executing_a_reset_writes_the_plan_shown_and_a_forged_plan_is_refused(
    cluster: ConsoleCluster,
) -> None:
    """The red team's eighth finding: the execute button re-sent the form's parameters, so
    posting it twice shifted the group twice (40->30, then 30->20), and a group that moved
    between plan and execute got offsets nobody was shown. Now the button carries the
    plan's offsets and those are written; a plan row that is not one (a bad partition, a
    negative or huge offset, a partition no store holds) is one line and no change."""
    name = "__group.planned"
    with MetadataClient(cluster.tower.address, timeout=10) as client:
        client.create_topic(name)
    cookie, token = xsrf(cluster.admin_url)
    plan = json.dumps([["web", cluster.partition, 3]])
    fields = {"_xsrf": token, "group": "planned", "to": "shift", "value": "-10", "topic": "web"}
    for _ in range(2):  # the same button twice: the same offsets twice
        got = post(
            cluster.admin_url,
            "/groups/reset",
            {**fields, "execute": "1", "plan": plan},
            cookie=cookie,
        )
        assert got.status == 200, got.body[-400:]
        with MetadataClient(cluster.tower.address, timeout=10) as client:
            entries = client.describe(name)["reset_offsets"]
        assert [e[:3] for e in entries] == [["web", cluster.partition, 3]]
    other = "F" * 32
    for bad, why in (
        ("[]", "1 to"),
        ("{", "not JSON"),
        (json.dumps([["web", "x", 3]]), "bad reset plan row"),
        (json.dumps([["web", cluster.partition, -1]]), "bad reset plan row"),
        (json.dumps([["web", cluster.partition, 2**63]]), "bad reset plan row"),
        (json.dumps([["web", other, 3]]), "held by no store"),
    ):
        got = post(
            cluster.admin_url,
            "/groups/reset",
            {**fields, "execute": "1", "plan": bad},
            cookie=cookie,
        )
        assert got.status == 400 and why in html.unescape(got.body), (bad, got.body[-300:])
        assert "Traceback" not in got.body
    with MetadataClient(cluster.tower.address, timeout=10) as client:
        assert [e[:3] for e in client.describe(name)["reset_offsets"]] == [
            ["web", cluster.partition, 3]
        ]
