"""One small cluster for the console's tests: a tower, a store, records (a non-UTF-8 key, an
XSS-looking value and header, a huge value, more records than a page shows), and two
``dafka console`` processes on free ports: one with the admin key, one read-only."""

from __future__ import annotations

import http.client
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from dafka.metadata.signing import ADMIN_KEY_ENV
from dafka.query.client import QueryClient
from tests.procs import Proc, StoreProc, Tower, py

TOPIC = "web"
XSS_VALUE = "<script>window.__xss=1</script><b id=injected>bold</b>"
XSS_HEADER = "<img src=x id=injected-header onerror=window.__xss=2>"
BAD_KEY = b"\xff\xfe\x00k"
HUGE = 100_000
MANY = 110  # more than a record page shows (MAX_PAGE)


def _records() -> bytes:
    lines = [BAD_KEY + b":plain value", b"xss:" + XSS_VALUE.encode(), b'json:{"a": [1, 2]}']
    lines.append(b"big:" + b"x" * HUGE)
    lines += [f"k{i}:v{i}".encode() for i in range(MANY)]
    return b"\n".join(lines) + b"\n"


@dataclass
class ConsoleCluster:
    tower: Tower
    store: StoreProc
    admin: Proc
    admin_url: str
    read_only: Proc
    read_only_url: str
    partition: str

    def stop(self) -> None:
        try:
            codes = [p.terminate() for p in (self.admin, self.read_only)]
        finally:
            self.store.kill()
            self.tower.stop()
        assert codes == [0, 0], (codes, self.admin.stderr[-2000:])  # a clean stop on SIGTERM


def start_console(tower: str, *args: str) -> tuple[Proc, str]:
    proc = Proc(py("dafka.cli.admin", "console", "--tower", tower, "--bind", "127.0.0.1:0", *args))
    m = proc.wait_line(r"console on (http://127\.0\.0\.1:\d+/)")
    return proc, m.group(1)


def start(tmp: Path, *, group: bool = False) -> ConsoleCluster:
    tower = Tower()
    store = StoreProc(tmp / "store", tower.address)
    t = tower.address
    producer = Proc(
        py("dafka.cli.producer", TOPIC, "--tower", t, "-K", ":", "-H", f"x-evil={XSS_HEADER}"),
        stdin=_records(),
    )
    assert producer.wait(60) == 0, producer.stderr
    if group:
        consumer = Proc(
            py("dafka.cli.consumer", TOPIC, "--tower", t, "-G", "app", "-o", "beginning", "-c", "5")
        )
        assert consumer.wait(60) == 0, consumer.stderr
    with QueryClient(store.query_endpoint, timeout=10) as client:
        (partition,) = {p.partition for p in client.heads([TOPIC])}
    admin, admin_url = start_console(t, "--admin-key", os.environ[ADMIN_KEY_ENV])
    ro, ro_url = start_console(t)
    return ConsoleCluster(tower, store, admin, admin_url, ro, ro_url, partition)


@dataclass(frozen=True)
class Answer:
    status: int
    body: str
    headers: dict[str, str]


def request(
    url: str,
    path: str,
    *,
    method: str = "GET",
    host: str | None = None,
    body: str | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    """One HTTP request to the console at ``url`` (``host``: the Host header to send)."""
    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        sent = dict(headers or {})
        sent["Host"] = host or where.netloc
        if body is not None:
            sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
        conn.request(method, path, body=body, headers=sent)
        r = conn.getresponse()
        return Answer(r.status, r.read().decode(errors="replace"), dict(r.getheaders()))
    finally:
        conn.close()


def xsrf(url: str, path: str = "/topics") -> tuple[str, str]:
    """``(cookie header, form token)`` as a page of the console hands them to its own forms:
    its browser id cookie and the form's ``_xsrf`` token."""
    got = request(url, path)
    cookie = re.search(r"dafka_console_id=([^;]+)", got.headers.get("Set-Cookie", ""))
    token = re.search(r'name="_xsrf" value="([^"]+)"', got.body)
    assert cookie and token, got
    return f"dafka_console_id={cookie.group(1)}", token.group(1)


def origin(url: str) -> str:
    """The console's own origin, as a browser on its page sends it."""
    where = urlsplit(url)
    return f"{where.scheme}://{where.netloc}"


def post(
    url: str,
    path: str,
    fields: dict[str, str],
    *,
    cookie: str | None = None,
    host: str | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    """A form post as the console's own page makes it (its Origin; ``cookie`` and the
    ``_xsrf`` of ``fields`` as given; ``host``: the Host header), ``headers`` added or
    replacing (an empty value: left out)."""
    sent = {"Origin": origin(url), **({"Cookie": cookie} if cookie else {}), **(headers or {})}
    sent = {k: v for k, v in sent.items() if v}
    return request(url, path, method="POST", host=host, body=urlencode(fields), headers=sent)
