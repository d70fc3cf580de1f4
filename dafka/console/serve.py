"""Running the console's web server: bind, serve on a thread, stop.

:func:`parse_bind` reads ``--bind`` (``HOST:PORT``; an empty host is 127.0.0.1, never every
interface). :class:`Server` binds in the caller's thread (so a port in use is one error
line before anything else happens), then serves tornado's :class:`HTTPServer` on its own
asyncio loop in a thread until :meth:`Server.stop`; :meth:`Server.start` starts the console's
background refresh too.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import socket
import threading

import tornado.httpserver
import tornado.netutil

from ..errors import ConfigError
from .reader import ClusterReader
from .web import MAX_BODY_BYTES, Console, ConsoleConfig, make_app

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_BIND", "DEFAULT_HOST", "Server", "parse_bind"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_BIND = f"{DEFAULT_HOST}:8480"


def parse_bind(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; port 0 = a free port) as ``(host, port)``."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"bad --bind {text[:80]!r}: HOST:PORT, e.g. {DEFAULT_BIND}")
    host = host.strip("[]")
    # guard: console-binds-loopback-by-default
    host = host or DEFAULT_HOST
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ConfigError(
                f"bad --bind host {host[:80]!r}: an IP address (127.0.0.1, 0.0.0.0) or localhost"
            ) from None
    return host, int(port)


class Server:
    """The console's HTTP server on a thread of its own (see the module)."""

    def __init__(self, config: ConsoleConfig, reader: ClusterReader | None = None) -> None:
        try:
            self.sockets = tornado.netutil.bind_sockets(
                config.port, address=config.host, family=socket.AF_UNSPEC, reuse_port=False
            )
        except OSError as exc:
            raise ConfigError(
                f"cannot bind the console to {config.host}:{config.port}: {exc.strerror or exc}"
            ) from None
        self.port = int(self.sockets[0].getsockname()[1])
        self.config = dataclasses.replace(config, port=self.port)
        self.console = Console(self.config, reader)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="console-http", daemon=True)

    @property
    def url(self) -> str:
        host = self.config.host
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.port}/"

    def start(self) -> None:
        self.console.start()
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = tornado.httpserver.HTTPServer(
            make_app(self.console),
            max_body_size=MAX_BODY_BYTES,
            max_buffer_size=MAX_BODY_BYTES * 2,
            idle_connection_timeout=60,
            body_timeout=30,
        )
        server.add_sockets(self.sockets)
        self._ready.set()
        await self._stop.wait()
        server.stop()
        await server.close_all_connections()

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        self.console.close()
