"""``dafka console`` in a real browser: Debian's headless Chromium driven by Playwright.

One cluster for the module (tests/console_cluster.py: a tower, a store, records with a
non-UTF-8 key, an XSS-looking value and header, a huge value; a consumer group; a console
with the admin key and a read-only one). Every page is loaded and checked for what a user
sees; a screenshot of each is kept under ``.artifacts/console/`` (``$DAFKA_ARTIFACTS`` to
put them elsewhere). One signed change (a topic created through the form) is made and
seen listed; the read-only console refuses the same form.

Skipped, saying why, where Chromium (``make install`` installs Debian's) or Playwright
(the test extra) is missing. Playwright's own browser download is never used.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dafka.console.render import MAX_OFFSET
from tests.console_cluster import BAD_KEY, ConsoleCluster, start
from tests.procs import ROOT, wait_until
from tests.tools import skip_or_fail

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = Path(os.environ.get("DAFKA_ARTIFACTS", ROOT / ".artifacts")) / "console"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleCluster]:
    c = start(Path(tmp_path_factory.mktemp("console")), group=True)
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # skipped without the browser, but failed under CI=true: CI installs both, so a skip
    # there would hide a console nobody tested in a browser
    if not Path(CHROMIUM).exists():
        skip_or_fail(f"no {CHROMIUM}: make install installs Debian's chromium")
    try:
        from playwright import sync_api
    except ImportError:
        skip_or_fail("no playwright: the test extra installs it")
    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield pg
    finally:
        context.close()
    assert not errors, errors  # no script error on any page (CSP refusals included)


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def text(page: Any, selector: str) -> str:
    return str(page.locator(selector).inner_text())


def test_every_page_shows_the_cluster(cluster: ConsoleCluster, page: Any) -> None:
    url = cluster.admin_url
    page.goto(url)
    assert "Raft leader: tcp://127.0.0.1:" in text(page, "#leader")
    assert "leader" in text(page, "#towers")
    shot(page, "cluster")

    page.click("text=Topics")
    assert "web" in text(page, "#topics")
    assert "__group.app" not in text(page, "#topics")  # internal topics hidden by default
    shot(page, "topics")

    page.click("#topics >> text=web")
    assert text(page, "#topic-name") == "web"
    partitions = text(page, "#partitions")
    assert cluster.partition in partitions and cluster.store.node_id in partitions
    assert "1 of 1" in partitions  # min_acks 1, held by the store
    shot(page, "topic")

    page.click("text=Stores")
    stores = text(page, "#stores")
    assert cluster.store.node_id in stores and "answering" in stores and "untrusted" in stores
    assert "% used); db " in stores and " free of " in stores  # its disk, from STATUS
    shot(page, "stores")

    page.click("nav >> text=Groups")
    page.click("#groups >> text=app")
    assert text(page, "#group-name") == "app"
    lag = text(page, "#lag")
    assert cluster.partition in lag
    assert "\t5\t" in lag and "\t114\t" in lag  # committed 5 of 114: lag 109
    assert "109" in lag
    shot(page, "group")

    page.goto(url + "metrics")
    metrics = text(page, "body")
    for line in (
        f'dafka_group_lag_records{{group="app",partition="{cluster.partition}",topic="web"}} 109.0',
        f'dafka_partition_stores{{partition="{cluster.partition}",topic="web"}} 1.0',
        'dafka_partitions_under_min_acks{topic="web"} 0.0',
        "dafka_console_stores_answering 1.0",
        "dafka_console_stores_known 1.0",
    ):
        assert line in metrics, line
    assert "dafka_console_refresh_seconds_count " in metrics
    shot(page, "metrics")


def test_the_record_browser_shows_peer_bytes_as_text(cluster: ConsoleCluster, page: Any) -> None:
    page.goto(cluster.admin_url + "topic?name=web")
    page.click("#partitions >> text=browse")
    rows = page.locator("#records tr")
    assert rows.count() == 1 + 20  # the header and a default page
    first = rows.nth(1)
    assert BAD_KEY.hex(" ") in first.locator("td.key").inner_text()
    assert "not UTF-8: shown as hex" in first.locator("td.key").inner_text()
    assert "verified: producer key" in first.locator("td.sig").inner_text()
    xss = rows.nth(2)
    assert "<script>window.__xss=1</script>" in xss.locator("td.value").inner_text()
    assert "<img src=x" in xss.locator("td.headers").inner_text()
    assert page.locator("#injected, #injected-header").count() == 0  # no element was made
    assert page.evaluate("window.__xss") is None  # and no script ran
    assert "truncated: the first 4096 of 100000 bytes" in rows.nth(4).inner_text()
    shot(page, "records")

    page.fill("input[name=offset]", "2")
    page.select_option("select[name=format]", "json")
    page.fill("input[name=limit]", "1")
    page.click("#browse button")
    assert page.locator("#records tr").count() == 2
    assert '"a": [\n    1,' in page.locator("#records td.value pre").inner_text()
    shot(page, "records-json")

    # a time (its own form): the first record at or after it (all were written after 1970)
    page.fill("input[name=time]", "1970-01-01T00:00:00Z")
    page.click("#at-time button")
    assert page.locator("#records td").first.inner_text() == "0"

    page.goto(cluster.admin_url + "records?topic=web&partition=P&offset=banana")
    assert text(page, "#error") == f"bad offset 'banana': a whole number from 0 to {MAX_OFFSET}"
    assert "Traceback" not in text(page, "body")
    shot(page, "error")


def test_the_live_tail_polls_the_newest_records(cluster: ConsoleCluster, page: Any) -> None:
    page.goto(cluster.admin_url + f"tail?topic=web&partition={cluster.partition}")
    wait_until(lambda: page.locator("#tail-records tr").count() > 1, 10, what="tail rows")
    assert "v109" in text(page, "#tail-records")
    assert "next offset 114" in text(page, "#tail-status")
    shot(page, "tail")


def test_a_signed_change_through_the_form_and_a_read_only_refusal(
    cluster: ConsoleCluster, page: Any
) -> None:
    page.goto(cluster.admin_url + "topics")
    page.fill("#create input[name=name]", "made-in-browser")
    page.fill("#create input[name=min_acks]", "1")
    page.fill("#create input[name=retention_ms]", "7d")
    page.click("#create button")
    assert text(page, "#done").startswith("created topic made-in-browser (log index ")
    page.goto(cluster.admin_url + "topics")
    assert "made-in-browser" in text(page, "#topics")
    shot(page, "created")

    page.goto(cluster.admin_url + "stores")  # trust the store: a second signed change
    page.click('#stores button:text-is("Trust")')
    assert text(page, "#done") == f"trusted store {cluster.store.node_id}"
    page.goto(cluster.admin_url + "stores")
    assert "untrusted" not in text(page, "#stores") and "Revoke" in text(page, "#stores")
    page.goto(cluster.admin_url + "topic?name=made-in-browser")  # and delete the topic
    page.fill("#delete input[name=confirm]", "made-in-browser")
    page.click("#delete button")
    assert text(page, "#done").startswith("deleted topic made-in-browser")

    # reset the group's offsets: the plan first, then the signed write; then back to 5
    for offset, lag in (("7", "107"), ("5", "109")):
        page.goto(cluster.admin_url + "group?name=app")
        page.select_option("#reset select[name=to]", "offset")
        page.fill("#reset input[name=value]", offset)
        page.click("#reset button")
        plan = text(page, "#reset-plan")
        assert cluster.partition in plan and f"\t{offset}" in plan
        if offset == "7":
            shot(page, "reset-plan")
        page.click("#execute button")
        assert text(page, "#done").startswith("reset 1 partition(s) of group app")
        page.goto(cluster.admin_url + "group?name=app")
        assert f"\t{offset}\t114\t{lag}\t" in text(page, "#lag")

    page.goto(cluster.read_only_url + "topics")
    assert "read-only" in text(page, "nav")
    page.fill("#create input[name=name]", "refused-in-browser")
    page.click("#create button")
    assert text(page, "#error") == (
        "read-only console: it was started without --admin-key, so it signs no change"
    )
    shot(page, "read-only-refused")
    page.goto(cluster.read_only_url + "topics")
    assert "refused-in-browser" not in text(page, "#topics")
