"""What every Dafka command shares: options, config file, logging, error handling.

Precedence of settings: command line, then ``DAFKA_*`` environment variables
(``DAFKA_TOWER``, ``DAFKA_HOST``, …), then the TOML file given with
``--config`` (top-level keys for every command, a ``[producer]``,
``[consumer]``, ``[store]`` or ``[tower]`` table for one), then defaults.
"""

from __future__ import annotations

import functools
import json
import logging
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click

from ..config import load_toml
from ..errors import ConfigError, DafkaError, ProfileError

F = TypeVar("F", bound=Callable[..., Any])

CONTEXT = {"auto_envvar_prefix": "DAFKA", "help_option_names": ["-h", "--help"]}


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(
            {
                "time": round(record.created, 3),
                "level": record.levelname.lower(),
                "logger": record.name,
                "message": record.getMessage(),
            }
        )


def setup_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def _load_config(section: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if not value:
            return value
        try:
            data = load_toml(value)
        except (ConfigError, ProfileError) as exc:
            raise click.BadParameter(str(exc)) from None
        shared = {k.replace("-", "_"): v for k, v in data.items() if not isinstance(v, dict)}
        own = {k.replace("-", "_"): v for k, v in dict(data.get(section, {})).items()}

        # accept option spellings (``data-dir``, ``format``) as well as parameter names
        names: dict[str, str] = {}
        for p in ctx.command.params:
            if p.name is None:
                continue
            names[p.name] = p.name
            for opt in getattr(p, "opts", []):
                if opt.startswith("--"):
                    names[opt[2:].replace("-", "_")] = p.name
        unknown = sorted(k for k in own if k not in names)
        if unknown:
            raise click.BadParameter(
                f"unknown setting(s) in [{section}] of {value}: {', '.join(unknown)}"
            )
        merged: dict[str, Any] = {}
        for key, item in [*shared.items(), *own.items()]:
            if key in names:  # shared keys meant for other commands are skipped
                merged[names[key]] = ",".join(map(str, item)) if isinstance(item, list) else item
        ctx.default_map = {**(ctx.default_map or {}), **merged}
        return value

    return callback


def common_options(section: str, *, node: bool = True) -> Callable[[F], F]:
    """``--config``, logging options and (for nodes) ``--tower`` and ``--host``."""

    def decorate(f: F) -> F:
        options = [
            click.option(
                "--config",
                "config_file",
                type=click.Path(dir_okay=False),
                is_eager=True,
                expose_value=False,
                callback=_load_config(section),
                help=f"TOML config file (top-level keys and a [{section}] table).",
            ),
            click.option(
                "--log-level",
                default="warning",
                show_default=True,
                type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
                help="Log level (logs go to stderr).",
            ),
            click.option(
                "--log-format",
                default="text",
                show_default=True,
                type=click.Choice(["text", "json"]),
                help="Log line format.",
            ),
        ]
        if node:
            options += [
                click.option(
                    "--tower",
                    "-t",
                    default="127.0.0.1:5556",
                    show_default=True,
                    help="Tower address(es), HOST:PORT of the beacon port, comma-separated.",
                ),
                click.option(
                    "--host",
                    default="127.0.0.1",
                    show_default=True,
                    help="Address to bind and advertise to peers.",
                ),
                click.option(
                    "--curve/--no-curve",
                    default=False,
                    show_default=True,
                    help="ZMTP CURVE on every data socket (DAFKA_CURVE, curve = true in TOML); "
                    "every node of the cluster must set it alike, and --tower needs "
                    "HOST:PORT@KEY. Off by default (docs/security.md).",
                ),
                click.option(
                    "--curve-allow",
                    default=None,
                    help="With --curve: the public keys (64 hex, comma-separated) of the only "
                    "clients this node's sockets accept. Default: any CURVE client.",
                ),
            ]
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def curve_allowed(curve: bool, allow: str | None) -> frozenset[bytes] | None:
    """The ``--curve-allow`` keys (None: any client); one ConfigError for a bad key."""
    from ..security.curve_keys import parse_public_key

    if allow is None:
        return None
    if not curve:
        raise ConfigError("--curve-allow needs --curve")
    return frozenset(parse_public_key(k) for k in allow.split(",") if k.strip())


def profile_option(f: F) -> F:
    """``--profile signed|rfc46`` (``DAFKA_PROFILE``, ``profile`` in TOML) for node commands."""
    return click.option(
        "--profile",
        default="signed",
        show_default=True,
        type=click.Choice(["signed", "rfc46"]),
        help="Wire profile: signed (Ed25519-signed batches) or rfc46 (the C reference's).",
    )(f)


def run_cli(f: F) -> F:
    """Turn user mistakes and Dafka errors into one line on stderr and an exit code."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if "log_level" in kwargs:
            setup_logging(kwargs.pop("log_level"), kwargs.pop("log_format"))
        try:
            return f(*args, **kwargs)
        except (ConfigError, ProfileError) as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except DafkaError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            sys.exit(130)
        except BrokenPipeError:
            sys.exit(0)

    return cast(F, wrapper)


def wait_for_signal(check: Callable[[], None] | None = None) -> None:
    """Block until SIGINT or SIGTERM (``check``, if given, runs every 0.5 s and may raise)."""
    stop = threading.Event()

    def handler(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    while not stop.wait(0.5):
        if check is not None:
            check()
