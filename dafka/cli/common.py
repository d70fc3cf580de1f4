"""What every Dafka command shares: options, config file, logging, error handling.

Every entry point is a :class:`Command` or :class:`Group`: ``--version`` on every
command, and one error style for all of them: a mistake is one line on stderr,
``error: ...``, never click's usage block or a traceback. Exit codes: 2 for a usage
or configuration mistake (a bad option, an unknown setting), 1 for a runtime failure
(no store answered, a timeout), 130 on Ctrl-C.

Precedence of settings: command line, then ``DAFKA_*`` environment variables
(``DAFKA_TOWER``, ``DAFKA_HOST``, …), then the TOML file given with
``--config`` (top-level keys for every command, a ``[producer]``,
``[consumer]``, ``[store]`` or ``[tower]`` table for one), then defaults.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import operator
import os
import select
import signal
import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click

from ..errors import ConfigError, DafkaError, NothingToChange, ProfileError
from ..io.fd_limit import raise_fd_limit
from .progress import end_progress

F = TypeVar("F", bound=Callable[..., Any])

CONTEXT = {"auto_envvar_prefix": "DAFKA", "help_option_names": ["-h", "--help"]}

SECTIONS = ("producer", "consumer", "store", "tower", "local", "admin", "raft", "kafka")
"""The tables a ``--config`` file may have, one per command."""
SHARED_KEYS = frozenset(
    {
        "tower",
        "host",
        "curve",
        "curve_allow",
        "profile",
        "mesh",
        "tower_fanout",
        "log_level",
        "log_format",
        "cluster",
        "metrics_port",
        "metrics_host",
        "metrics_topic_cap",
    }
)
"""The top-level keys of a ``--config`` file: settings several commands share. Any other
key belongs in a command's table."""


def version() -> str:
    """The installed ``dafka`` distribution's version."""
    import importlib.metadata  # here: 20 ms of every command's start-up otherwise

    try:
        return importlib.metadata.version("dafka")
    except importlib.metadata.PackageNotFoundError:  # running from a bare checkout
        return "unknown"


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"{ctx.find_root().info_name} {version()}")
        ctx.exit(0)


def _version_option() -> click.Option:
    return click.Option(
        ["--version"],
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_show_version,
        help="Print the version and exit.",
    )


def _one_line(exc: click.ClickException) -> str:
    """A click error as one line, with where to look for the right spelling."""
    text = " ".join(exc.format_message().split())
    text = text[:1].lower() + text[1:]
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1]
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and ctx is not None:
        text += f" (see {ctx.command_path} --help)"
    return text


def _main(run: Callable[..., Any], args: Any, prog_name: Any, extra: dict[str, Any]) -> None:
    """Run a click command and turn every way it can fail into one line and an exit code."""
    raise_fd_limit()  # a node meshing with hundreds of peers needs more than 1,024
    try:
        rv = run(args=args, prog_name=prog_name, standalone_mode=False, **extra)
    except click.exceptions.NoArgsIsHelpError as exc:  # a bare group: its help, on stderr
        click.echo(exc.ctx.get_help() if exc.ctx else exc.format_message(), err=True)
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(f"error: {_one_line(exc)}", err=True)
        sys.exit(exc.exit_code)
    except click.Abort:
        sys.exit(130)
    except (ConfigError, ProfileError) as exc:  # raised while options were parsed
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except DafkaError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    sys.exit(rv if isinstance(rv, int) else 0)


class Command(click.Command):
    """A click command with ``--version`` and Dafka's one-line errors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.append(_version_option())

    def main(self, args: Any = None, prog_name: Any = None, **extra: Any) -> Any:  # type: ignore[override]
        extra.pop("standalone_mode", None)
        _main(super().main, args, prog_name, extra)


class Group(click.Group):
    """A click group whose subcommands and subgroups are :class:`Command` and :class:`Group`."""

    command_class = Command

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.append(_version_option())

    def main(self, args: Any = None, prog_name: Any = None, **extra: Any) -> Any:  # type: ignore[override]
        extra.pop("standalone_mode", None)
        _main(super().main, args, prog_name, extra)


Group.group_class = Group


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
        from ..config import load_toml  # here: dafka.config loads zmq and the crypto

        try:
            data = load_toml(value)
        except (ConfigError, ProfileError) as exc:
            raise ConfigError(str(exc)) from None
        shared = {k.replace("-", "_"): v for k, v in data.items() if not isinstance(v, dict)}
        tables = sorted(k for k, v in data.items() if isinstance(v, dict) and k not in SECTIONS)
        if tables:
            raise ConfigError(
                f"unknown table(s) in {value}: {', '.join(f'[{t}]' for t in tables)} "
                f"(tables: {', '.join(SECTIONS)})"
            )
        stray = sorted(k for k in shared if k not in SHARED_KEYS)
        if stray:
            raise ConfigError(
                f"unknown top-level setting(s) in {value}: {', '.join(stray)} (top-level "
                f"keys: {', '.join(sorted(SHARED_KEYS))}; others go in a command's table)"
            )
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
            raise ConfigError(f"unknown setting(s) in [{section}] of {value}: {', '.join(unknown)}")
        multiple = {p.name for p in ctx.command.params if getattr(p, "multiple", False)}
        merged: dict[str, Any] = {}
        for key, item in [*shared.items(), *own.items()]:
            if key not in names:  # shared keys meant for other commands are skipped
                continue
            if names[key] in multiple:  # an option given more than once: a list, or one value
                merged[names[key]] = [str(i) for i in item] if isinstance(item, list) else [item]
            else:
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


_ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", "0": b"\0", "\\": b"\\"}


def unescape(text: str) -> bytes:
    """A delimiter or format as bytes: ``\\n \\r \\t \\0 \\\\`` and ``\\xHH`` (any byte),
    as kcat reads ``-D`` and ``-K``; other characters as UTF-8. One ConfigError for a bad escape."""
    out = bytearray()
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\":
            out += char.encode()
            i += 1
            continue
        nxt = text[i + 1 : i + 2]
        if nxt in _ESCAPES:
            out += _ESCAPES[nxt]
            i += 2
        elif (
            nxt == "x"
            and len(text) >= i + 4
            and all(c in "0123456789abcdefABCDEF" for c in text[i + 2 : i + 4])
        ):
            out.append(int(text[i + 2 : i + 4], 16))
            i += 4
        else:
            raise ConfigError(
                f"bad escape '{text[i : i + 4]}' in '{text}': use \\n \\r \\t \\0 \\\\ or \\xHH"
            )
    return bytes(out)


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


def mesh_option(f: F) -> F:
    """``--mesh topics|full`` (``DAFKA_MESH``, ``mesh`` in TOML) for producers and consumers:
    :attr:`dafka.config.NodeConfig.mesh`; its choices are :data:`dafka.config.MESHES`, written
    out here so that ``--help`` does not load dafka.config (a test holds them equal)."""
    return click.option(
        "--mesh",
        default="topics",
        show_default=True,
        type=click.Choice(["topics", "full"]),
        help="Discovery mesh (signed profile; rfc46 nodes are always full). topics: hear, and "
        "connect to, the stores and the nodes sharing one of this node's topics. full: hear "
        "every node's beacon and connect to every node, as the C reference does; its "
        "connections and beacon traffic grow with the whole cluster, not with its topics. Use "
        "full only for a node that must hear every node (docs/wire.md 6.3).",
    )(f)


def fanout_option(f: F) -> F:
    """``--tower-fanout one|all`` (``DAFKA_TOWER_FANOUT``, ``tower_fanout`` in TOML) for
    producers, consumers and stores: :attr:`dafka.config.NodeConfig.tower_fanout`; its
    choices are :data:`dafka.config.FANOUTS`, written out here so that ``--help`` does not load
    dafka.config (a test holds them equal)."""
    return click.option(
        "--tower-fanout",
        default="one",
        show_default=True,
        type=click.Choice(["one", "all"]),
        help="Of several towers (--tower A,B,...), which this node beacons to (signed "
        "profile; rfc46 nodes beacon to every tower). one: the tower its node ID picks, the "
        "next when that one falls silent; the towers relay to each other, so they must be "
        "peered (dafka-tower --peer; a metadata group's towers are). all: every tower, for "
        "towers that are not peered (docs/wire.md 6.4).",
    )(f)


EXIT_CLOSED_PIPE = 141
"""The exit status when the reader of the output went away (``| head -1``): 128 + SIGPIPE,
what a program the signal killed returns, as kcat does; not 0, which would say that every
record was written."""


def _quiet_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's flush at exit does not fail
    again on what could not be written (a second error, a traceback)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def run_cli(f: F) -> F:
    """Turn user mistakes and Dafka errors into one line on stderr and an exit code."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if "log_level" in kwargs:
            setup_logging(kwargs.pop("log_level"), kwargs.pop("log_format"))
        try:
            return f(*args, **kwargs)
        except NothingToChange as exc:  # an admin change the metadata has already: done
            end_progress()
            click.echo(f"nothing to change: {exc}", err=True)
            sys.exit(0)
        except (ConfigError, ProfileError) as exc:
            end_progress()
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except DafkaError as exc:
            end_progress()
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            sys.exit(130)
        except BrokenPipeError:  # the reader closed the pipe: not all was written (SIGPIPE's)
            _quiet_stdout()
            # guard: closed-pipe-exit-0-record
            sys.exit(EXIT_CLOSED_PIPE)
        # guard: output-cannot-written-error-line
        except OSError as exc:  # writing the output failed (a full disk, /dev/full): one line
            _quiet_stdout()
            end_progress()
            click.echo(f"error: {exc.strerror or exc}: the output could not be written", err=True)
            sys.exit(1)
        finally:
            end_progress()

    return cast(F, wrapper)


# A signal's Python handler runs between two bytecodes of the main thread, and a handler
# written in Python is itself bytecodes: under a storm of signals each one ran inside the
# one before, until RecursionError broke out of whatever code was running (1 of 20 waiters
# under test_cli_signals' storm on CI; 8 of 20 with the recursion limit at 30). So the stop
# signals get a handler written in C, which returns at once and never nests:
# ``operator.is_(signum, frame)``. What tells the wait is the byte that Python's own C-level
# handler writes to the wakeup fd, before any Python runs.
_C_LEVEL_NOTHING = operator.is_
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def wait_for_signal(check: Callable[[], None] | None = None) -> None:
    """Block until SIGINT or SIGTERM (``check``, if given, runs at once, then every 0.5 s,
    and may raise).

    From then on, for the process's life, both signals cost nothing and do nothing: the
    shutdown that follows runs to its end however many arrive (a supervisor escalates to
    SIGKILL if it must). No lock is taken when a signal arrives: a handler that set a
    ``threading.Event`` could find its lock held by the code it interrupted, and wait for
    ever."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)  # a full pipe drops a byte: a stop is pending already
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    for sig in STOP_SIGNALS:
        signal.signal(sig, _C_LEVEL_NOTHING)
    while True:
        if check is not None:
            check()
        if select.select([r], [], [], 0.5)[0]:
            try:
                woke = os.read(r, 4096)  # one byte a signal, its number
            except BlockingIOError:
                continue
            if any(byte in STOP_SIGNALS for byte in woke):
                return


class Seconds(click.ParamType):
    """A timeout in seconds: a finite number above 0, at most a day (``nan``, ``inf`` and
    ``1e308`` used to reach the sockets' deadlines and end in a traceback)."""

    name = "seconds"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or not 0 < seconds <= MAX_SECONDS:
            self.fail(f"{value!r}: seconds above 0, at most {MAX_SECONDS:g}", param, ctx)
        return seconds


MAX_SECONDS = 86_400.0
SECONDS = Seconds()


def admin_key_option(f: Any) -> Any:
    """``--admin-key FILE``: the admin key a command signs its metadata change with (the
    ``dafka`` admin commands, ``dafka groups reset``)."""
    from ..metadata.signing import ADMIN_KEY_ENV, DEFAULT_ADMIN_KEY

    return click.option(
        "--admin-key",
        "admin_key",
        default=None,
        envvar=ADMIN_KEY_ENV,
        type=click.Path(dir_okay=False),
        help=f"Admin key file to sign the change with [env: {ADMIN_KEY_ENV}; "
        f"default: {DEFAULT_ADMIN_KEY}].",
    )(f)
