"""The console's web shell: tornado handlers over :class:`~dafka.console.reader.ClusterReader`.

Security (docs/console.md):

* it binds where it is told, 127.0.0.1 unless told otherwise (:mod:`dafka.cli.console`);
* every GET and POST names the console in its ``Host`` header (:func:`.checks.host_allowed`:
  a loopback name or the bound host on the bound port, or an ``--allow-host`` name), else 421
  (a DNS-rebinding page reaches the console under its own name, which is refused); a
  request without one is refused with 400;
* every POST comes from the console's own page: its ``Origin`` (or, without one, its
  ``Referer``) is the console's origin as the checked ``Host`` gives it, and it carries the
  XSRF token of the browser's id cookie, an HMAC under a secret the process draws at start
  (:func:`.checks.form_token`): a token cannot be made by setting a cookie nor taken from
  another console; else 403;
* a field holding a control character is refused (400), before tornado would replace it
  with a space;
* every change is signed with the admin key the console was started with; without one the
  console is read-only and a change is refused with 403 before anything is signed;
* templates escape everything (tornado's autoescape): topic, group and store names, keys,
  headers and values are a peer's text and render as text;
* an error is one line on an error page (no traceback: ``debug`` and ``serve_traceback``
  off, :meth:`Page.write_error`); bodies are capped at :data:`MAX_BODY_BYTES`;
* work per request is bounded: a record page shows at most ``MAX_PAGE`` records of at most
  ``MAX_SHOWN_BYTES`` each (:mod:`dafka.console.render`); the overview pages and ``/metrics``
  show the last background reading and never wait for the cluster; per-request cluster work
  runs on bounded lanes with a share per client address, 503 at once beyond
  (:mod:`dafka.console.lanes`).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import tornado.template
import tornado.web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from ..cli.holdings import human
from ..errors import ConfigError, DafkaError, DafkaTimeout
from ..groups.admin import GroupInfo
from ..groups.reset_admin import check_spec
from ..ids import check_topic, is_group_topic
from .changes import ADMIN_REFUSAL, plan_rows, topic_form
from .checks import (
    ID_COOKIE,
    control_character,
    form_token,
    host_allowed,
    parse_host,
    same_origin,
    valid_id,
)
from .lanes import ConsoleBusy, Lane
from .metrics import ConsoleCollector, ReadingCollector, refresh_histogram
from .reader import ClusterReader
from .reading import Reading
from .render import (
    Format,
    page_size,
    parse_offset,
    parse_time,
    show_bytes,
    show_disk,
    show_time,
)

log = logging.getLogger(__name__)

__all__ = ["Console", "ConsoleConfig", "host_allowed", "make_app"]  # host_allowed: .checks

HERE = Path(__file__).parent
MAX_BODY_BYTES = 64 << 10
MAX_NAME_CHARS = 300
GROUP_CACHE_SECONDS = 10.0
MAX_GROUPS_SCRAPED = 50
GROUP_SCRAPE_TIMEOUT = 2.0
"""Seconds the background describer gives one group (a page's describe has ``--timeout``)."""
FIRST_READING_WAIT = 15.0
LANES = {"reads": (1, 4, 2), "groups": (1, 2, 1), "changes": (1, 2, 2)}
"""Per-request lanes (:mod:`dafka.console.lanes`): workers, slots, slots per client address.
``reads``: record pages, time lookups, the group list; ``groups``: a group described;
``changes``: signed changes."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ConsoleConfig:
    towers: str
    host: str
    port: int
    cluster: str = "dafka"
    timeout: float = 5.0
    admin_key: str | None = None
    series_cap: int = 1000
    allowed_hosts: tuple[str, ...] = ()
    """More names the ``Host`` header may give (``--allow-host``: a console bound to another
    address and reached by a DNS name or through a proxy)."""
    refresh: float = 2.0
    """Seconds between the end of one background reading and the start of the next."""


class Console:
    """What the handlers share: the config, the background refresh and its last reading, the
    request lanes (:mod:`dafka.console.lanes`), metrics.

    A thread reads the cluster at most every ``config.refresh`` seconds and publishes a
    :class:`Reading` (:attr:`reading`); another describes the groups for ``/metrics``, at most
    every :data:`GROUP_CACHE_SECONDS` while ``/metrics`` is scraped. Pages and ``/metrics``
    show the last reading and never wait for the cluster (but for the very first reading, at
    most :data:`FIRST_READING_WAIT` seconds); per-request work runs on a lane.
    """

    def __init__(self, config: ConsoleConfig, reader: ClusterReader | None = None) -> None:
        self.config = config
        self.reader = reader or ClusterReader(
            config.towers, cluster=config.cluster, timeout=config.timeout
        )
        self.lanes = {
            name: Lane(name, workers=w, slots=n, per_client=c) for name, (w, n, c) in LANES.items()
        }
        self.registry = CollectorRegistry()
        self.refresh = refresh_histogram(self.registry)
        self.reading: Reading | None = None
        self.groups: dict[str, GroupInfo] = {}
        self._first: Future[Reading] = Future()
        self._first_groups: Future[None] = Future()
        self._asked: Future[None] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._groups_wanted = threading.Event()
        self._threads: list[threading.Thread] = []
        self.registry.register(
            ConsoleCollector(
                lambda: (None if self.reading is None else self.reading.snapshot, self.groups),
                config.series_cap,
            )
        )
        self.registry.register(ReadingCollector(lambda: self.reading, self.reader.started))

    @property
    def read_only(self) -> bool:
        return self.config.admin_key is None

    def start(self) -> None:
        """The background refresh and group describer (threads until :meth:`close`)."""
        for name, target in (("refresh", self._refresh_loop), ("groups", self._groups_loop)):
            thread = threading.Thread(target=target, name=f"console-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def refresh_once(self) -> Reading:
        """One reading, published (the refresh thread's; tests call it directly)."""
        with self._lock:
            asked, self._asked = self._asked, None
        began = time.monotonic()
        try:
            reading = self.reader.read(self.reading)
            self.refresh.observe(time.monotonic() - began)
            self.reading = reading
            if not self._first.done():
                self._first.set_result(reading)
            return reading
        finally:
            if asked is not None:  # whoever waits for this reading shows what there is
                asked.set_result(None)

    def _refresh_loop(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self.refresh_once()
                except Exception:  # a bug, not the cluster: the next reading may do better
                    log.exception("console.reading_failed")
                self._wake.wait(self.config.refresh)
                self._wake.clear()
        finally:
            self.reader.close()  # its sockets belong to this thread

    async def latest(self) -> Reading | None:
        """The last reading (the first one awaited, at most :data:`FIRST_READING_WAIT` s)."""
        # guard: console-pages-show-the-last-reading
        reading = self.reading
        if reading is None:
            first = asyncio.shield(asyncio.wrap_future(self._first))
            try:
                await asyncio.wait_for(first, FIRST_READING_WAIT)
            except TimeoutError:  # no reading yet: the page says so
                return self.reading
            reading = self.reading
        return reading

    async def fresh(self) -> None:
        """Wait (at most the timeout) for a reading started after now: a change is seen."""
        with self._lock:
            if self._asked is None:
                self._asked = Future()
            asked = self._asked
        self._wake.set()
        try:
            await asyncio.wait_for(
                asyncio.shield(asyncio.wrap_future(asked)), self.config.timeout + 5
            )
        except TimeoutError:  # the page is shown anyway, with the last reading
            log.info("console.no_fresh_reading")

    async def want_groups(self) -> None:
        """Ask the describer for the groups' lag (at most every :data:`GROUP_CACHE_SECONDS`);
        the first time, wait for it (at most :data:`FIRST_READING_WAIT` s)."""
        self._groups_wanted.set()
        if not self._first_groups.done():
            first = asyncio.shield(asyncio.wrap_future(self._first_groups))
            try:
                await asyncio.wait_for(first, FIRST_READING_WAIT)
            except TimeoutError:  # served without the lag this time
                log.info("console.groups_not_described_yet")

    def _describe_groups(self) -> dict[str, GroupInfo]:
        out: dict[str, GroupInfo] = {}
        timeout = min(self.config.timeout, GROUP_SCRAPE_TIMEOUT)
        for name in self.reader.groups()[:MAX_GROUPS_SCRAPED]:
            try:
                out[name] = self.reader.group(name, timeout)
            except DafkaError as exc:
                log.info("console.group_unread group=%s error=%s", name, exc)
        return out

    def _groups_loop(self) -> None:
        while not self._stop.is_set():
            self._groups_wanted.wait()
            self._groups_wanted.clear()
            if self._stop.is_set():
                return
            try:
                self.groups = self._describe_groups()
            except DafkaError as exc:  # the last known lag stays, with the reading's age
                log.info("console.groups_unread error=%s", exc)
            except Exception:  # a bug, not the cluster: the next scrape asks again
                log.exception("console.groups_failed")
            finally:
                if not self._first_groups.done():
                    self._first_groups.set_result(None)
            self._stop.wait(GROUP_CACHE_SECONDS)

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        self._groups_wanted.set()
        for lane in self.lanes.values():
            lane.close()
        for thread in self._threads:
            thread.join(self.config.timeout + 10)
        if not self._threads:
            self.reader.close()


class Page(tornado.web.RequestHandler):
    """Every handler: the Host check, safe headers, one-line error pages."""

    console: Console

    def initialize(self, console: Console) -> None:
        self.console = console
        self._console_token: bytes | None = None

    def set_default_headers(self) -> None:
        self.set_header(
            "Content-Security-Policy",
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
            "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
        )
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("X-Frame-Options", "DENY")
        # same-origin: a browser sends a POST's Origin (checked) only if the policy lets it
        self.set_header("Referrer-Policy", "same-origin")
        self.set_header("Cache-Control", "no-store")

    def check_host(self) -> None:
        """The ``Host`` header names this console (DNS rebinding; :mod:`.checks`)."""
        config = self.console.config
        header = self.request.headers.get("Host")
        if header is None:
            raise tornado.web.HTTPError(400, log_message="no Host header: name the console")
        # guard: console-checks-host-header
        if not host_allowed(header, config.host, config.port, config.allowed_hosts):
            raise tornado.web.HTTPError(
                421, reason="Misdirected Request", log_message="unknown Host header"
            )

    def check_fields(self) -> None:
        """No control character in any field: tornado would make it a space (``a\\0b``
        would name the topic ``a b``)."""
        bad = control_character(self.request.arguments)
        # guard: console-refuses-control-characters
        if bad is not None:
            raise tornado.web.HTTPError(
                400, log_message=f"field {bad[:40]!r} holds a control character: not accepted"
            )

    def prepare(self) -> None:
        self.check_host()
        self.check_fields()

    def browser_id(self) -> str:
        """This browser's id cookie, set when it has none (or not one of ours)."""
        value = self.get_cookie(ID_COOKIE)
        if not valid_id(value):
            value = secrets.token_hex(16)
            self.set_cookie(ID_COOKIE, value, httponly=True, samesite="Strict", path="/")
        assert value is not None
        return value

    @property
    def xsrf_token(self) -> bytes:
        """The token the console's forms carry (``xsrf_form_html``): see :mod:`.checks`."""
        if self._console_token is None:
            secret = self.application.settings["console_secret"]
            self._console_token = form_token(secret, self.browser_id()).encode()
        return self._console_token

    def check_xsrf_cookie(self) -> None:
        """Every POST (tornado calls this before :meth:`prepare`): the Host, the Origin, the
        token of the browser's id cookie."""
        self.check_host()
        sent = self.request.headers.get("Origin") or self.request.headers.get("Referer")
        host = parse_host(self.request.headers.get("Host", ""))
        assert host is not None  # check_host
        if not sent:
            raise tornado.web.HTTPError(
                403,
                log_message="a change must come from the console's page: no Origin or Referer header",
            )
        # guard: console-post-checks-origin
        if not same_origin(sent, host):
            raise tornado.web.HTTPError(
                403,
                log_message=f"a change must come from the console's page, not {sent[:100]!r}",
            )
        browser = self.get_cookie(ID_COOKIE)
        token = self.get_body_argument("_xsrf", None) or self.request.headers.get("X-Xsrftoken")
        secret = self.application.settings["console_secret"]
        good = valid_id(browser) and token is not None
        if not good or not hmac.compare_digest(
            (token or "").encode(), form_token(secret, browser or "").encode()
        ):
            raise tornado.web.HTTPError(
                403,
                log_message="_xsrf token missing or not this console's: reload the page and post "
                "again",
            )

    def get_template_namespace(self) -> dict[str, Any]:
        ns = super().get_template_namespace()
        reading = self.console.reading
        ns.update(
            banner=None if reading is None else reading.banner(),
            known=reading is not None and reading.known,
            read_only=self.console.read_only,
            show_bytes=show_bytes,
            show_time=show_time,
            show_disk=show_disk,
            human=human,
            towers=self.console.config.towers,
        )
        return ns

    def arg(self, name: str, default: str | None = None) -> str | None:
        value = self.get_argument(name, default, strip=False)
        if value is not None and len(value) > MAX_NAME_CHARS:
            raise tornado.web.HTTPError(400, log_message=f"{name} is too long")
        return value

    def need(self, name: str) -> str:
        value = self.arg(name)
        if not value:
            raise tornado.web.HTTPError(400, log_message=f"missing {name}")
        return value

    async def latest(self) -> Reading:
        """The last background reading (never a wait on the cluster but for the first)."""
        reading = await self.console.latest()
        if reading is None:
            raise tornado.web.HTTPError(
                503, log_message="the console has not read the cluster yet: try again"
            )
        return reading

    async def call(self, lane: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn`` on a worker of ``lane`` (:mod:`dafka.console.lanes`): 503 at once when the
        lane is full or this client holds its share; a :class:`DafkaError` becomes a one-line
        error page."""
        try:
            return await self.console.lanes[lane].run(self.request.remote_ip or "-", fn, *args)
        except ConsoleBusy as exc:
            raise tornado.web.HTTPError(503, log_message=_line(exc)) from None
        except ConfigError as exc:
            raise tornado.web.HTTPError(400, log_message=_line(exc)) from None
        except DafkaTimeout as exc:
            raise tornado.web.HTTPError(504, log_message=_line(exc)) from None
        except DafkaError as exc:
            raise tornado.web.HTTPError(502, log_message=_line(exc)) from None

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, tornado.web.HTTPError) and exc.log_message:
            # without args tornado doubled each % of the message: formatting undoes it
            line = _line(exc.log_message % exc.args)
        elif status_code >= 500:
            line = "the console failed to answer this request (its log says why)"
        else:
            line = self._reason
        self.set_header("Content-Type", "text/html; charset=UTF-8")
        if status_code == 503:
            self.set_header("Retry-After", "1")
        self.render("error.html", status=status_code, reason=self._reason, line=line)


def _line(what: object) -> str:
    text = str(what).strip().splitlines()
    return (text[0] if text else "error")[:500]


class ClusterPage(Page):
    async def get(self) -> None:
        reading = await self.latest()
        self.render("cluster.html", snap=reading.snapshot)


class TopicsPage(Page):
    async def get(self) -> None:
        reading = await self.latest()
        self.render("topics.html", snap=reading.snapshot, internal=self.arg("internal") == "1")


class TopicPage(Page):
    async def get(self) -> None:
        name = self.need("name")
        reading = await self.latest()
        row = reading.snapshot.topics.get(name)
        if row is None and not reading.known:
            raise tornado.web.HTTPError(
                503, log_message=f"the metadata was not read yet: is {name!r} a topic? try again"
            )
        if row is None:
            raise tornado.web.HTTPError(404, log_message=f"unknown topic {name!r}")
        self.render("topic.html", row=row, snap=reading.snapshot)


class StoresPage(Page):
    async def get(self) -> None:
        reading = await self.latest()
        self.render("stores.html", snap=reading.snapshot)


class GroupsPage(Page):
    async def get(self) -> None:
        names = await self.call("reads", self.console.reader.groups)
        self.render("groups.html", names=names)


class GroupPage(Page):
    async def get(self) -> None:
        name = self.need("name")
        info = await self.call("groups", self.console.reader.group, name)
        self.render("group.html", info=info)


class RecordsPage(Page):
    """The record browser: ``?topic=&partition=&offset=|time=&limit=&format=``; ``.json``
    for the live tail's script."""

    async def get(self, as_json: str | None = None) -> None:
        topic, partition = self.need("topic"), self.need("partition")
        try:
            fmt = Format.parse(self.arg("format"))
            limit = page_size(self.arg("limit"))
            when = self.arg("time")
            offset = self.arg("offset")
            if when and offset:
                raise ConfigError("give offset= or time=, not both")
            start = parse_offset(offset)
            note = None
            if when:
                ts = parse_time(when)
                found = await self.call(
                    "reads", self.console.reader.offset_at, topic, partition, ts
                )
                if found is None:  # after the newest record: an empty page from the end
                    row = (await self.latest()).snapshot.topics.get(topic)
                    heads = (
                        [p.head for p in row.partitions if p.partition == partition] if row else []
                    )
                    found = (heads[0] or 0) + 1 if heads and heads[0] is not None else 0
                    note = f"no record at or after {when[:40]} yet"
                start = found
        except ConfigError as exc:
            raise tornado.web.HTTPError(400, log_message=_line(exc)) from None
        snap = (await self.latest()).snapshot
        page = await self.call(
            "reads", self.console.reader.records, snap, topic, partition, start, limit
        )
        if as_json:
            self.write(
                {
                    "next_offset": page.next_offset,
                    "error": page.error,
                    "records": [
                        {
                            "offset": r.offset,
                            "time": show_time(r.timestamp_ms),
                            "key": show_bytes(r.key, fmt).text,
                            "value": show_bytes(r.value, fmt).text,
                            "notes": "; ".join(n for n in (show_bytes(r.value, fmt).note,) if n),
                            "signature": r.signature,
                        }
                        for r in page.records
                    ],
                }
            )
            return
        self.render("records.html", page=page, fmt=fmt, limit=limit, note=note)


class TailPage(Page):
    async def get(self) -> None:
        topic, partition = self.need("topic"), self.need("partition")
        snap = (await self.latest()).snapshot
        row = snap.topics.get(topic)
        part = next((p for p in row.partitions if p.partition == partition), None) if row else None
        if part is None:
            raise tornado.web.HTTPError(404, log_message=f"no partition {partition} of {topic!r}")
        start = max(part.tail or 0, (part.head or 0) - 9)
        self.render("tail.html", topic=topic, partition=partition, start=start)


class Change(Page):
    """A POST that changes the metadata: refused on a read-only console."""

    def prepare(self) -> None:
        super().prepare()
        # guard: console-read-only-refuses-changes
        if self.console.read_only:
            raise tornado.web.HTTPError(403, log_message=ADMIN_REFUSAL)

    async def sign(self, op: str, *args: Any) -> int:
        key = self.console.config.admin_key
        assert key is not None
        index = await self.call("changes", self.console.reader.change, key, op, *args)
        await self.console.fresh()  # the pages after it show the change
        return index

    def done(self, line: str, back: str) -> None:
        self.render("done.html", line=line, back=back)


class CreateTopic(Change):
    async def post(self) -> None:
        name = self.need("name")
        settings = _form(self.request.arguments)
        index = await self.sign("create_topic", name, settings)
        self.done(f"created topic {name} (log index {index})", "/topics")


class AlterTopic(Change):
    async def post(self) -> None:
        name = self.need("name")
        settings = _form(self.request.arguments)
        if not settings:
            raise tornado.web.HTTPError(400, log_message="nothing to change: give a setting")
        index = await self.sign("alter_topic", name, settings)
        self.done(f"altered topic {name} (log index {index})", "/topics")


class DeleteTopic(Change):
    async def post(self) -> None:
        name = self.need("name")
        # guard: console-delete-no-group-topic
        if is_group_topic(name):
            raise tornado.web.HTTPError(
                403,
                log_message=f"{name} keeps a group's commits: the console does not delete it "
                "(dafka topics delete, by an admin, can)",
            )
        if self.arg("confirm") != name:
            raise tornado.web.HTTPError(400, log_message="type the topic's name to delete it")
        index = await self.sign("delete_topic", name)
        self.done(f"deleted topic {name} (log index {index})", "/topics")


class ResetGroup(Change):
    """A group's offsets reset: the plan first, written (signed) with ``execute=1``."""

    async def post(self) -> None:
        group = self.need("group")
        to, value, topic = self.arg("to") or "", self.arg("value") or "", self.arg("topic") or ""
        try:
            if to == "datetime":
                spec = check_spec(to, str(parse_time(value)))
            else:
                spec = check_spec(to, value)
            topics = (check_topic(topic.strip()),) if topic.strip() else ()
        except ConfigError as exc:
            raise tornado.web.HTTPError(400, log_message=_line(exc)) from None
        execute = self.arg("execute") == "1"
        # executing: the offsets of the plan the page showed, not a plan made anew
        try:
            exact = plan_rows(self.arg("plan")) if execute else None
        except ConfigError as exc:
            raise tornado.web.HTTPError(400, log_message=_line(exc)) from None
        key = self.console.config.admin_key
        assert key is not None
        plan = await self.call(
            "changes", self.console.reader.reset, key, group, spec, topics, execute, exact
        )
        if execute:
            await self.console.fresh()
        rows = json.dumps([[r.topic, r.partition, r.new] for r in plan.rows], separators=(",", ":"))
        self.render("reset.html", plan=plan, to=to, value=value, topic=topic, rows=rows)


class TrustStore(Change):
    async def post(self) -> None:
        store = self.need("store")
        op = "revoke_store" if self.arg("revoke") == "1" else "trust_store"
        await self.sign(op, store)
        word = "revoked" if op == "revoke_store" else "trusted"
        self.done(f"{word} store {store}", "/stores")


def _form(arguments: Mapping[str, list[bytes]]) -> dict[str, Any]:
    try:
        return topic_form({k: v[-1].decode("utf-8", "strict") for k, v in arguments.items() if v})
    except UnicodeDecodeError:
        raise tornado.web.HTTPError(400, log_message="a form field is not UTF-8") from None
    except ConfigError as exc:
        raise tornado.web.HTTPError(400, log_message=_line(exc)) from None


class Metrics(Page):
    """The last reading's metrics: never a wait on the cluster (but for the first reading and
    the first groups described)."""

    async def get(self) -> None:
        await self.console.latest()
        await self.console.want_groups()
        encoder, content_type = choose_encoder(self.request.headers.get("Accept", ""))
        self.set_header("Content-Type", content_type)
        self.finish(encoder(self.console.registry))


class NotFound(Page):
    def prepare(self) -> None:
        super().prepare()
        raise tornado.web.HTTPError(404, log_message=f"no page at {self.request.path[:100]}")


def make_app(console: Console) -> tornado.web.Application:
    args = {"console": console}
    # guard: console-autoescapes-templates
    autoescape = "xhtml_escape"
    # guard: console-xsrf-cookies-on
    xsrf = True
    return tornado.web.Application(
        [
            (r"/", ClusterPage, args),
            (r"/topics", TopicsPage, args),
            (r"/topic", TopicPage, args),
            (r"/stores", StoresPage, args),
            (r"/groups", GroupsPage, args),
            (r"/group", GroupPage, args),
            (r"/records(\.json)?", RecordsPage, args),
            (r"/tail", TailPage, args),
            (r"/topics/create", CreateTopic, args),
            (r"/topics/alter", AlterTopic, args),
            (r"/topics/delete", DeleteTopic, args),
            (r"/stores/trust", TrustStore, args),
            (r"/groups/reset", ResetGroup, args),
            (r"/metrics", Metrics, args),
        ],
        template_loader=tornado.template.Loader(str(HERE / "templates"), autoescape=autoescape),
        static_path=str(HERE / "static"),
        xsrf_cookies=xsrf,
        console_secret=secrets.token_bytes(32),
        debug=False,
        serve_traceback=False,
        default_handler_class=NotFound,
        default_handler_args=args,
    )
