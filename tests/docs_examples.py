"""The docs' examples as tests: extract the fenced blocks of README.md and docs/*.md, and run
the runnable ones as a user would, in a shell, against real processes.

Markers. A fenced block of shell (info string ``sh``) or Python (``python``) carries, on the
line right above its fence, an HTML comment saying what the test does with it:

* ``<!-- run: SCENARIO -->``: run it. The runnable blocks of one file with the same
  SCENARIO run in one shell session, in the order of the file, in one temporary directory
  (a doc that builds up state: a tower, then a topic, then records). The comment may hold
  more lines before ``-->``: hidden shell commands run just before the block (what the
  reader has done by then, e.g. ``dafka-local &`` in place of ``make run``).
* ``<!-- run: SCENARIO forever -->``: a block that runs until stopped (a consumer loop):
  it runs in the background, and what it says it prints must appear while it runs.
* ``<!-- skip: REASON -->``: not run (it needs Spark, installs, runs for ever...): REASON
  says why, and the count of skipped blocks is reported.

A block with a command in it and no marker is an error (:func:`unmarked`), so a new example
cannot slip in untested. Synopses that are not commands use the info string ``text``.

Commands. A shell block is split into commands at line ends (a ``\\`` at the end of a line
continues it). Each command runs in the scenario's one ``bash`` (``set -o pipefail``,
stdin ``/dev/null``), so variables and ``cd`` carry over; it must exit 0 within its
deadline. A comment ``# prints "TEXT"`` (anywhere in it) asserts TEXT appears in what it
wrote (stdout and stderr, whitespace runs compared as one space; in a Python block, a
``# prints "TEXT"`` comment anywhere is checked for the whole block). A command ending in
``&`` runs in the background: the runner waits until the ports it is told to bind
(``--bind``, ``--tower-bind``; a tower's default) accept a connection and its metrics
(``--metrics-port``) say ``dafka_node_running 1``. At the end every process of the session
is stopped, newest first (SIGTERM, then SIGKILL).

Ports. The docs name fixed ports (5556, 9101, 7001, ...). The runner moves every port by
one offset, mechanically: a number from 5500 to 9999 that follows ``:``, ``port `` or
``tower-`` (a tower's default data directory is ``.dafka/tower-PORT``) is a port, and
becomes ``PORT + OFFSET``, with OFFSET chosen so that every such port of the scenario (and
a tower's three neighbours) is free. The defaults the commands fall back to
move with them: ``DAFKA_TOWER``, ``DAFKA_BIND`` and ``DAFKA_TOWER_BIND`` are set to
``127.0.0.1:(5556 + OFFSET)``.
"""

from __future__ import annotations

import base64
import contextlib
import os
import random
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")))

_FENCE = re.compile(r"^(\s*)(```+)\s*([\w-]*)")
_MARKER = re.compile(r"^\s*<!--\s*(run|skip):\s*(.*?)\s*(-->)?\s*$")
_PRINTS = re.compile(r"#.*?\bprints \"([^\"]+)\"")
_PORT = re.compile(r"(?:(?<=:)|(?<=port )|(?<=tower-))([5-9]\d{3})(?!\d)")
_PORT_RANGE = range(5500, 10_000)
_BIND_FLAGS = re.compile(r"--(bind|tower-bind|metrics-port)[ =](?:\S*:)?(\d+)")
_COMMAND = re.compile(r"^\s*(?:\.venv/bin/|\$ )?(dafka[\w-]*|make|python3?|curl|seq)\b")
_TOWER_CMD = re.compile(r"^\S*dafka-(tower|local)\b")
RUN_LANGS = ("sh", "python")
DEFAULT_TOWER_PORT = 5556


@dataclass(frozen=True)
class Block:
    """One fenced block of a doc, with its marker (``run``, ``skip`` or ``""``)."""

    path: str
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    marker: str = ""
    arg: str = ""  # the scenario (run) or the reason (skip)
    hidden: str = ""  # shell commands the marker holds, run before the block

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def scenario(self) -> str:
        return self.arg.split()[0] if self.arg else ""

    @property
    def forever(self) -> bool:
        """``run: SCENARIO forever``: the block runs until stopped (a consumer loop)."""
        return self.arg.split()[1:] == ["forever"]


@dataclass(frozen=True)
class Command:
    text: str
    prints: tuple[str, ...] = ()
    background: bool = False
    line: int = 0

    def bind_ports(self) -> list[tuple[int, bool]]:
        """The ports a background command is told to listen on, each with whether it
        serves metrics (``--metrics-port 0``: none)."""
        return [(int(p), f == "metrics-port") for f, p in _BIND_FLAGS.findall(self.text) if int(p)]


@dataclass
class Scenario:
    path: str
    name: str
    blocks: list[Block] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.path}::{self.name}"


def parse(path: str, text: str) -> list[Block]:
    """Every fenced block of a markdown text, with the marker comment right above it."""
    lines = text.split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(2), m.group(3)
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        if j == len(lines):
            raise ValueError(f"{path}:{i + 1}: a fenced block that is never closed")
        body = "\n".join(line[len(m.group(1)) :] for line in lines[i + 1 : j])
        marker, arg, hidden = _marker_above(lines, i)
        blocks.append(Block(path, i + 1, lang, body, marker, arg, hidden))
        i = j + 1
    return blocks


def _marker_above(lines: list[str], fence: int) -> tuple[str, str, str]:
    """The ``<!-- run|skip: ... -->`` comment ending on the line above ``fence``."""
    end = fence - 1
    if end < 0 or "-->" not in lines[end]:
        return "", "", ""
    start = end
    while start >= 0 and "<!--" not in lines[start]:
        start -= 1
    if start < 0:
        return "", "", ""
    m = _MARKER.match(lines[start])
    if not m:
        return "", "", ""
    if start == end:
        return m.group(1), m.group(2), ""
    hidden = "\n".join(lines[start + 1 : end] + [lines[end].split("-->")[0]]).strip()
    return m.group(1), m.group(2), hidden


def commands(text: str, first_line: int = 0) -> list[Command]:
    """The commands of a shell block: one per line, ``\\`` continuing a line; ``prints "T"``
    in a line's comment is what it must print; a trailing ``&`` runs it in the background."""
    out: list[Command] = []
    pending: list[str] = []
    start = 0
    for n, raw in enumerate(text.split("\n")):
        if not pending:
            start = n
        if raw.rstrip().endswith("\\"):
            pending.append(raw.rstrip()[:-1])
            continue
        pending.append(raw)
        joined = " ".join(part.strip() for part in pending)
        pending = []
        if not joined or joined.startswith("#"):
            continue
        prints = tuple(_PRINTS.findall(joined))
        code = _strip_comment(joined)
        background = code.endswith("&") and not code.endswith("&&")
        out.append(Command(joined, prints, background, first_line + start))
    if pending:
        raise ValueError("a shell block ends in a line continuation")
    return out


def _strip_comment(line: str) -> str:
    """``line`` without a trailing ``# ...`` comment (outside quotes), stripped."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].strip()
    return line.strip()


def doc_ports(text: str) -> set[int]:
    """The ports a text names (see the module docstring)."""
    return {int(p) for p in _PORT.findall(text) if int(p) in _PORT_RANGE}


def map_ports(text: str, offset: int) -> str:
    """``text`` with every port it names moved by ``offset``."""

    def move(m: re.Match[str]) -> str:
        port = int(m.group(1))
        return str(port + offset) if port in _PORT_RANGE else m.group(1)

    return _PORT.sub(move, text)


def unmarked(blocks: Iterable[Block]) -> list[Block]:
    """Blocks the test cannot tell what to do with: a shell or Python block without a
    marker, or an untagged block that starts with a command (tag it ``sh`` or ``text``)."""
    bad = []
    for b in blocks:
        if b.marker:
            continue
        if b.lang in RUN_LANGS or (not b.lang and _COMMAND.match(b.text)):
            # guard: example-commands-run-skip-marker
            bad.append(b)
    return bad


def load(docs: Iterable[str] = DOCS) -> list[Block]:
    return [b for path in docs for b in parse(path, (ROOT / path).read_text())]


HOSTED = "deploy-"
"""Scenarios named ``deploy-HOST`` run on the hosts of docs/deploy.md, each a network
namespace (tests/integration/test_deploy_guide.py), not in one local shell."""


def scenarios(blocks: Iterable[Block], hosted: bool = False) -> list[Scenario]:
    """The ``run`` blocks grouped by (file, scenario), in the order of first appearance;
    those of the hosted scenarios (:data:`HOSTED`) only if ``hosted``."""
    found: dict[tuple[str, str], Scenario] = {}
    for b in blocks:
        if b.marker == "run" and (hosted or not b.scenario.startswith(HOSTED)):
            key = (b.path, b.scenario)
            found.setdefault(key, Scenario(b.path, b.scenario)).blocks.append(b)
    return list(found.values())


def _normal(text: str) -> str:
    return " ".join(text.split())


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pick_offset(ports: set[int], rng: random.Random | None = None) -> int:
    """An offset moving every port of ``ports`` (and the three above each) to free ports
    between 11000 and 32000, below Linux's ephemeral range."""
    rng = rng or random.Random()
    ports = ports | {DEFAULT_TOWER_PORT}
    for _ in range(50):
        offset = rng.randrange(11_000 - min(ports), 32_000 - max(ports) - 4)
        if all(_port_free(p + offset + k) for p in ports for k in range(4)):
            return offset
    raise RuntimeError("no free ports for the docs' examples")


class CommandFailed(AssertionError):
    pass


class Session:
    """One ``bash`` for a scenario: commands are sent to it one at a time (base64 on fd 3,
    so a command reading stdin reads ``/dev/null``), each followed by its exit status."""

    MARK = "__docs_example_status__"

    def __init__(
        self,
        cwd: Path,
        env: dict[str, str],
        prefix: Iterable[str] = (),
        errexit: bool = False,
    ) -> None:
        """``prefix``: the command that runs the shell (``ip netns exec NS ...``: a host of
        docs/deploy.md); ``errexit``: ``set -e``, so a whole block of commands can be sent as
        one (a failing command ends the shell, and :meth:`run` says so)."""
        loop = (
            ("trap 'echo \"exit status $? from: $BASH_COMMAND\"' ERR; set -e; " if errexit else "")
            + "set -o pipefail; exec 3<&0 </dev/null; "
            "while IFS= read -r -u 3 line; do "
            'eval "$(printf %s "$line" | base64 -d)"; '
            f'echo "{self.MARK} $?"; done'
        )
        self.proc = subprocess.Popen(
            [*prefix, "bash", "--noprofile", "--norc", "-c", loop],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its background jobs too: one killpg ends them all
        )
        self._out = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        for chunk in iter(lambda: os.read(fd, 65536), b""):
            with self._lock:
                self._out += chunk

    def mark(self) -> int:
        """Where the output stands now, for :meth:`since`."""
        with self._lock:
            return len(self._out)

    def since(self, mark: int) -> str:
        """What the session wrote after ``mark`` (commands' status lines taken out)."""
        with self._lock:
            return bytes(self._out[mark:]).decode(errors="replace")

    def run(self, code: str, timeout: float) -> tuple[int, str]:
        """Run ``code``; its exit status and output (with what background jobs wrote
        meanwhile). Raises :class:`CommandFailed` past ``timeout``."""
        with self._lock:
            start = len(self._out)
        assert self.proc.stdin is not None
        self.proc.stdin.write(base64.b64encode(code.encode()) + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        pattern = re.compile(rf"^{self.MARK} (\d+)$".encode(), re.M)
        while True:
            with self._lock:
                m = pattern.search(self._out, start)
                if m:
                    status = int(m.group(1))
                    out = bytes(self._out[start : m.start()]).decode(errors="replace")
                    del self._out[m.start() : m.end() + 1]  # what comes next starts clean
                    return status, out
            if self.proc.poll() is not None:
                raise CommandFailed(f"the shell ended (status {self.proc.returncode})")
            if time.monotonic() > deadline:
                with self._lock:
                    out = bytes(self._out[start:]).decode(errors="replace")
                raise CommandFailed(f"no end within {timeout} s; output so far:\n{out}")
            time.sleep(0.02)

    def close(self) -> None:
        """Stop the session's processes newest first, as a user would (a consumer before
        the store its last commit goes to): SIGTERM, up to 5 s each to exit; then SIGKILL
        to whatever of the session is left."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGTERM)  # the shell itself: no more commands
        for pid in reversed(_group_members(self.proc.pid)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and _running(pid):
                self.proc.poll()
                time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(5)
        self._reader.join(5)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (state first), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _running(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def _group_members(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``, oldest first."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields and fields[0] != "Z" and int(fields[2]) == pgid:
            found.append((int(fields[19]), int(entry.name)))  # starttime, pid
    return [pid for _, pid in sorted(found)]


def _ready(port: int, metrics: bool) -> bool:
    """Something listens on ``port``; for a metrics port, its node says it runs (the
    endpoint answers ``dafka_node_running 0`` while the node is still starting)."""
    if not metrics:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
            return re.search(rb"^dafka_node_running 1", reply.read(), re.M) is not None
    except OSError:
        return False


def _wait_ready(port: int, metrics: bool, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _ready(port, metrics):
            return True
        time.sleep(0.05)
    return False


def scenario_env(offset: int, root: Path = ROOT) -> dict[str, str]:
    tower = f"127.0.0.1:{DEFAULT_TOWER_PORT + offset}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAFKA_")}
    env.update(
        PATH=f"{root / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(root),
        DAFKA_TOWER=tower,
        DAFKA_BIND=tower,
        DAFKA_TOWER_BIND=tower,
        PYTHONUNBUFFERED="1",
    )
    return env


def run_scenario(
    scenario: Scenario, workdir: Path, command_timeout: float = 45.0, log: list[str] | None = None
) -> None:
    """Run every block of ``scenario`` in ``workdir``; raise :class:`CommandFailed` on the
    first command that fails, times out or does not print what it says it prints."""
    text = "\n".join(b.text + "\n" + b.hidden for b in scenario.blocks)
    offset = pick_offset(doc_ports(text))
    workdir.mkdir(parents=True, exist_ok=True)
    venv = workdir / ".venv"
    if not venv.exists():
        venv.symlink_to(ROOT / ".venv")
    log = log if log is not None else []
    session = Session(workdir, scenario_env(offset))
    try:
        for block in scenario.blocks:
            steps = commands(block.hidden) if block.hidden else []
            if block.lang == "python":
                script = workdir / f"block_{block.line}.py"
                script.write_text(map_ports(block.text, offset))
                prints = tuple(_PRINTS.findall(block.text))
                run = f"python3 {script.name}" + (" &" if block.forever else "")
                steps.append(Command(run, prints, block.forever, block.line))
            else:
                steps += commands(block.text, block.line + 1)
            for cmd in steps:
                _run_command(session, block, cmd, offset, command_timeout, log)
    finally:
        session.close()


def _run_command(
    session: Session, block: Block, cmd: Command, offset: int, timeout: float, log: list[str]
) -> None:
    code = map_ports(_strip_comment(cmd.text), offset)
    where = f"{block.path}:{cmd.line or block.line}"
    started = time.monotonic()
    mark = session.mark()
    status, out = session.run(code, timeout)
    log.append(f"{where} ({time.monotonic() - started:.1f} s) $ {code}\n{out}")
    # guard: docs-examples-runner-fails-command
    if status != 0:
        raise CommandFailed(f"{where}: exit status {status}: {code}\n{out}")
    for expected in cmd.prints:
        want = _normal(map_ports(expected, offset))
        if cmd.background:  # it prints while it runs: what the session shows since it began
            deadline = time.monotonic() + timeout
            while want not in _normal(out := session.since(mark)) and time.monotonic() < deadline:
                time.sleep(0.1)
        # guard: docs-examples-runner-fails-command-2
        if want not in _normal(out):
            raise CommandFailed(f"{where}: {code}\ndid not print {expected!r}; it printed:\n{out}")
    if cmd.background:
        ports = Command(code).bind_ports()
        if not any(not metrics for _, metrics in ports) and _TOWER_CMD.match(code):
            ports.append((DEFAULT_TOWER_PORT + offset, False))  # the default --bind
        for port, metrics in ports:
            if not _wait_ready(port, metrics, timeout):
                _, more = session.run("jobs -l", 5)
                raise CommandFailed(f"{where}: {code}\nnothing listens on {port}:\n{out}{more}")


def summary(blocks: Iterable[Block]) -> dict[str, int]:
    counts = {"run": 0, "skip": 0}
    for b in blocks:
        if b.marker in counts:
            counts[b.marker] += 1
    return counts


def skipped(blocks: Iterable[Block]) -> Iterator[Block]:
    return (b for b in blocks if b.marker == "skip")


# Flags: every --flag the docs give a Dafka command, in prose or a block, is one it has

_SPAN = re.compile(r"`([^`\n]+)`")
_CLI_START = re.compile(r"(?:^|(?<=[\s(|;&$]))(?:\.venv/bin/)?(dafka(?:-[a-z]+)?)(?=\s|$)")
_LONG_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


@dataclass(frozen=True)
class FlagUse:
    path: str
    line: int
    command: str  # e.g. "dafka topics create"
    flag: str  # "": the mention itself (its subcommands are checked)


def entry_points(root: Path = ROOT) -> dict[str, str]:
    """The console scripts of setup.cfg: name -> ``module:function``."""
    import configparser

    config = configparser.ConfigParser()
    config.read(root / "setup.cfg")
    scripts = config["options.entry_points"]["console_scripts"]
    return dict(
        (name.strip(), target.strip())
        for name, target in (line.split("=") for line in scripts.strip().splitlines())
    )


def flag_uses(path: str, text: str, scripts: Iterable[str]) -> list[FlagUse]:
    """Each mention of a command in ``text`` (flag ""), and each long flag it gives it: in
    an inline code span, or on a line of a fenced block that is not Python (``\\``
    continuations joined). Outside shell blocks, ``A | B`` alternatives of a group
    (``dafka topics list | describe T``) name sibling subcommands; in a shell block ``|``
    is a pipe. Lowercase words after a command are its subcommands, then arguments."""
    names = set(scripts)
    out: list[FlagUse] = []
    lines = text.split("\n")
    lang: str | None = None  # inside a block: its info string
    pending = ""
    for n, line in enumerate(lines, 1):
        fence = _FENCE.match(line)
        if fence:
            lang = fence.group(3) if lang is None else None
            continue
        if lang == "python":
            continue
        if lang is not None:
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            pieces = [pending + line]
            pending = ""
        else:
            pieces = _SPAN.findall(line)
        for piece in pieces:
            out += _uses_in(path, n, _strip_comment(piece), names, alternatives=lang != "sh")
    return out


def _uses_in(
    path: str, line: int, piece: str, names: set[str], alternatives: bool
) -> list[FlagUse]:
    out = []
    for m in _CLI_START.finditer(piece):
        if m.group(1) not in names or re.search(r"\b(from|import)\s+$", piece[: m.start()]):
            continue
        rest = piece[m.end() :]
        # this mention runs to the next mention of a command, a pipe to another program
        # or a ';'/'&&'
        stop = re.search(r"(;|&&|\$\(|`|(?:\.venv/bin/)?dafka(?:-[a-z]+)?\s)", rest)
        rest = rest[: stop.start()] if stop else rest
        segments = rest.split("|")
        words = segments[0].split()
        sub = [w for w in words if re.fullmatch(r"[a-z][a-z-]*|\.\.\.", w)]
        out.append(FlagUse(path, line, " ".join([m.group(1), *sub]), ""))
        for flag in _LONG_FLAG.findall(segments[0]):
            out.append(FlagUse(path, line, " ".join([m.group(1), *sub]), flag))
        for seg in (
            segments[1:] if alternatives else []
        ):  # siblings: "| describe events | alter events --producers"
            sibling = seg.split()
            if sibling and re.fullmatch(r"[a-z][a-z-]*", sibling[0]) and len(sub) >= 1:
                parent = [m.group(1), *sub[:-1]] if len(sub) > 1 else [m.group(1)]
                out.append(FlagUse(path, line, " ".join([*parent, sibling[0]]), ""))
                for flag in _LONG_FLAG.findall(seg):
                    out.append(FlagUse(path, line, " ".join([*parent, sibling[0]]), flag))
    return out


def _walk(command: str, scripts: dict[str, str]) -> tuple[Any, str]:
    """The click command ``command`` names, and the word that is not a subcommand of the
    group it reached ("" if none: the rest are arguments, or ``...``)."""
    import importlib

    import click

    words = command.split()
    module, _, func = scripts[words[0]].partition(":")
    cmd = getattr(importlib.import_module(module), func)
    for word in words[1:]:
        if not isinstance(cmd, click.Group):
            break
        if word not in cmd.commands:
            return cmd, "" if word == "..." else word
        cmd = cmd.commands[word]
    return cmd, ""


def command_flags(command: str, scripts: dict[str, str]) -> set[str]:
    """Every long flag of ``command`` ("dafka topics create" walks to the subcommand;
    words after the last subcommand are arguments; ``...`` stands for any subcommand below,
    so it has the flags of all of them)."""
    import click

    cmd, _ = _walk(command, scripts)
    any_below = "..." in command.split()
    flags = {"--help"}
    todo = [cmd]
    while todo:
        c = todo.pop()
        for param in c.params:
            flags.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("--"))
        if any_below and isinstance(c, click.Group):
            todo += c.commands.values()
    return flags


def unknown_flags(docs: Iterable[str] = DOCS) -> list[str]:
    """``path:line: command --flag`` for every flag a doc gives a command that lacks it,
    and ``path:line: command: no subcommand WORD`` for a group given one it lacks."""
    scripts = entry_points()
    bad = []
    for path in docs:
        for use in flag_uses(path, (ROOT / path).read_text(), scripts):
            if not use.flag:
                _, stray = _walk(use.command, scripts)
                if stray:
                    bad.append(f"{use.path}:{use.line}: {use.command}: no subcommand {stray}")
            elif use.flag not in command_flags(use.command, scripts):
                bad.append(f"{use.path}:{use.line}: {use.command} {use.flag}")
    return bad
