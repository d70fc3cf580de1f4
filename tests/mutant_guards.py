"""Guard markers: where an attack mutant takes a defence out, found by a comment, not by text.

A defended statement carries a marker comment, on its own line just above the statement (the
form ``tests/mutant_convert.py`` writes: it never lengthens a line) or at the end of one of
the statement's lines::

    # guard: producer-checks-ack-signatures
    if self._batched and not self._profile.check_ack(msg):
        return

and a mutant in ``tests/attack_mutants.py`` names it with what takes its place::

    Guard("producer-checks-ack-signatures", "if False:")

The replacement takes the place of the marked statement, indented as it was: of its header
for a compound statement (``if``, ``elif``, ``while``, ``for``, ``with``, ``try``... from its
first line to the colon ending the header, however many lines that is), of all its lines for
a simple statement, and of the compound statement with its body when ``whole=True``. A
multi-line replacement's lines after the first are indented relative to the statement.

The module and the function holding the marker (its qualname: ``Class.method``, or the
outermost function around a nested one) come from scanning the packages' source files
(``PACKAGES``) for the marker and from their syntax tree, so a function moved to another
module or class keeps its mutants, and a guarded line may be edited freely as long as its
marker stays with it (the replacement, written once, is the statement without its defence).
A slug marks exactly one statement: a slug found nowhere, or twice, is an error naming it.
"""

from __future__ import annotations

import ast
import bisect
import functools
import importlib
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("dafka", "tower", "tests")
"""The packages scanned for markers (tests: a few mutants take out a check of a test helper)."""

MARKER = re.compile(r"#\s*guard: ([A-Za-z0-9][A-Za-z0-9_.-]*)\s*$")
"""A marker comment, alone or at the end of another comment on the same line."""

_COMPOUND = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Match,
    ast.ExceptHandler,
) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_STATEMENTS = (ast.stmt, ast.excepthandler)  # an ``except ...:`` clause can be marked too
Statement = ast.stmt | ast.excepthandler


@dataclass(frozen=True)
class Guard:
    """Replace the statement marked ``# guard: <slug>`` by ``replacement`` (see the module)."""

    slug: str
    replacement: str
    whole: bool = False


class GuardError(Exception):
    """A marker that cannot be used: absent, repeated, or not on a statement of a function."""


@dataclass(frozen=True)
class Site:
    """Where one marker is: the statement it marks and the function around it."""

    slug: str
    path: Path
    line: int  # the marker's line, 1-based
    module: str
    qualname: str | None  # None: the marker is not usable, ``problem`` says why
    problem: str
    func_start: int  # first line of the function (its first decorator), 1-based
    func_end: int
    start: int  # the marked statement's first line
    header_end: int  # its header's last line (a simple statement: its last line)
    end: int  # its last line

    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def span(self, whole: bool) -> tuple[int, int]:
        """The lines a replacement takes the place of, 1-based, inclusive."""
        return self.start, self.end if whole else self.header_end


# ---------------------------------------------------------------------- scanning


@functools.cache
def package_files(packages: tuple[str, ...] | None = None) -> tuple[tuple[str, Path], ...]:
    """``(module name, path)`` of every source file of the (imported) packages."""
    out = []
    for package in packages or PACKAGES:
        for root in importlib.import_module(package).__path__:
            base = Path(root)
            for path in sorted(base.rglob("*.py")):
                if "__pycache__" in path.parts:
                    continue
                parts = [package, *path.relative_to(base).with_suffix("").parts]
                if parts[-1] == "__init__":
                    parts.pop()
                out.append((".".join(parts), path))
    return tuple(out)


@functools.cache
def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def clear_caches() -> None:
    """Forget the files read (after they were rewritten)."""
    package_files.cache_clear()
    _text.cache_clear()
    _parsed.cache_clear()
    _markers.cache_clear()
    _sites.cache_clear()


@dataclass
class Parsed:
    """A source file's lines, tokens and statements, with each statement's parents."""

    lines: list[str]  # with their line ends
    tokens: list[tokenize.TokenInfo]
    token_starts: list[tuple[int, int]]
    statements: list[tuple[Statement, tuple[ast.AST, ...]]]  # (statement, its parents)

    def header_end(self, stmt: Statement) -> int:
        """The line of the colon that ends a compound statement's header (else its last)."""
        if not isinstance(stmt, _COMPOUND):
            return stmt.end_lineno or stmt.lineno
        depth = 0
        i = bisect.bisect_left(self.token_starts, (stmt.lineno, stmt.col_offset))
        for tok in self.tokens[i:]:
            if tok.type == tokenize.OP:
                if tok.string in "([{":
                    depth += 1
                elif tok.string in ")]}":
                    depth -= 1
                elif tok.string == ":" and depth == 0:
                    return tok.start[0]
        return stmt.end_lineno or stmt.lineno  # pragma: no cover (no colon: not compound)


@functools.cache
def _parsed(path: Path) -> Parsed:
    text = _text(path)
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    statements: list[tuple[Statement, tuple[ast.AST, ...]]] = []

    def walk(node: ast.AST, parents: tuple[ast.AST, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _STATEMENTS):
                statements.append((child, parents))
            walk(child, (*parents, child) if isinstance(child, _STATEMENTS) else parents)

    walk(ast.parse(text, str(path)), ())
    return Parsed(text.splitlines(keepends=True), tokens, [t.start for t in tokens], statements)


def markers(text: str) -> list[tuple[str, int, int, bool]]:
    """``(slug, line, column, alone on its line)`` of every marker comment in ``text``."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            match = MARKER.search(tok.string)
            if match:
                alone = not tok.line[: tok.start[1]].strip()
                out.append((match.group(1), tok.start[0], tok.start[1], alone))
    return out


@functools.cache
def _markers(path: Path) -> tuple[tuple[str, int, int, bool], ...]:
    return tuple(markers(_text(path)))


def _site(module: str, path: Path, slug: str, line: int, col: int, alone: bool) -> Site:
    parsed = _parsed(path)

    def bad(problem: str) -> Site:
        return Site(slug, path, line, module, None, problem, 0, 0, 0, 0, 0)

    inside = [
        (s, p)
        for s, p in parsed.statements
        if s.lineno <= line <= (s.end_lineno or s.lineno) and line <= parsed.header_end(s)
    ]
    if alone:
        if inside:
            return bad("the marker is inside a statement, not just above one")
        after = [(s, p) for s, p in parsed.statements if s.lineno > line]
        if not after:
            return bad("no statement follows the marker")
        first = min(s.lineno for s, _ in after)
        stmt, parents = min(
            ((s, p) for s, p in after if s.lineno == first), key=lambda sp: len(sp[1])
        )
        if stmt.col_offset != col:
            return bad("the marker is not indented as the statement that follows it")
    else:
        if not inside:
            return bad("the marker's line is not a statement's (or a header's)")
        stmt, parents = min(inside, key=lambda sp: (sp[0].lineno, len(sp[1])))
    chain = (*parents, stmt)
    func_index = next((i for i, n in enumerate(chain) if isinstance(n, _FUNCTIONS)), None)
    if func_index is None:
        return bad("the marked statement is not inside a function")
    func = chain[func_index]
    assert isinstance(func, _FUNCTIONS)
    if func is stmt:
        return bad("the marker marks a function's definition, not a statement in it")
    names = [n.name for n in chain[:func_index] if isinstance(n, ast.ClassDef)]
    start = min([func.lineno, *(d.lineno for d in func.decorator_list)])
    return Site(
        slug,
        path,
        line,
        module,
        ".".join([*names, func.name]),
        "",
        start,
        func.end_lineno or func.lineno,
        stmt.lineno,
        parsed.header_end(stmt),
        stmt.end_lineno or stmt.lineno,
    )


@functools.cache
def _sites(slug: str | None, packages: tuple[str, ...]) -> tuple[Site, ...]:
    out = []
    for module, path in package_files(packages):
        text = _text(path)
        if "guard:" not in text or (slug is not None and f"guard: {slug}" not in text):
            continue
        for found, line, col, alone in _markers(path):
            if slug is None or found == slug:
                out.append(_site(module, path, found, line, col, alone))
    return tuple(out)


def all_sites(packages: tuple[str, ...] | None = None) -> dict[str, list[Site]]:
    """Every marker of the packages, by slug (a list: a slug may be, wrongly, repeated)."""
    out: dict[str, list[Site]] = {}
    for site in _sites(None, packages or PACKAGES):
        out.setdefault(site.slug, []).append(site)
    return out


def locate(slug: str, packages: tuple[str, ...] | None = None) -> Site:
    """The one usable statement marked ``slug``; :class:`GuardError` naming it if not one."""
    found = _sites(slug, packages or PACKAGES)
    where = ", ".join(p + "/" for p in packages or PACKAGES)
    if not found:
        raise GuardError(f"guard {slug!r}: no '# guard: {slug}' marker in {where}")
    if len(found) > 1:
        raise GuardError(
            f"guard {slug!r} marks {len(found)} statements: " + ", ".join(s.where() for s in found)
        )
    site = found[0]
    if site.qualname is None:
        raise GuardError(f"guard {slug!r} at {site.where()}: {site.problem}")
    return site


# ---------------------------------------------------------------------- mutating


def replace_lines(lines: list[str], start: int, end: int, replacement: str) -> list[str]:
    """``lines`` (1-based ``start``..``end`` inclusive) replaced, indented as ``start`` was."""
    first = lines[start - 1]
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    new = [(indent + r if r.strip() else "") + "\n" for r in replacement.split("\n")]
    return [*lines[: start - 1], *new, *lines[end:]]


def sources(
    guards: list[Guard], packages: tuple[str, ...] | None = None
) -> list[tuple[str, str, str]]:
    """``(module, qualname, mutated source)`` of each function the guards touch.

    Every guard in one function is applied to one copy of its source, so a mutant may take
    out several defences of the same function. Raises :class:`GuardError`.
    """
    by_function: dict[tuple[Path, str], list[tuple[Site, Guard]]] = {}
    for guard in guards:
        site = locate(guard.slug, packages)
        assert site.qualname is not None
        by_function.setdefault((site.path, site.qualname), []).append((site, guard))
    out = []
    for (path, qualname), edits in by_function.items():
        first = edits[0][0]
        lines = _parsed(path).lines[first.func_start - 1 : first.func_end]
        taken: list[tuple[int, int]] = []
        for site, guard in sorted(edits, key=lambda e: -e[0].start):
            start, end = site.span(guard.whole)
            if any(start <= b and a <= end for a, b in taken):
                raise GuardError(f"guard {guard.slug!r} overlaps another guard of {qualname}")
            taken.append((start, end))
            offset = first.func_start - 1
            lines = replace_lines(lines, start - offset, end - offset, guard.replacement)
        out.append((first.module, qualname, "".join(lines)))
    return out


def dedent(source: str) -> str:
    """A function's source moved to column 0 (as ``tests.attack_mutants`` compiles it)."""
    indent = len(source) - len(source.lstrip(" "))
    return "\n".join(line[indent:] for line in source.split("\n"))


def problems(guards: list[Guard], packages: tuple[str, ...] | None = None) -> list[str]:
    """What keeps these guards from applying (nothing: they apply)."""
    try:
        mutated = sources(guards, packages)
    except GuardError as e:
        return [str(e)]
    out = []
    for module, qualname, source in mutated:
        try:
            compile(dedent(source), f"<guard {module}.{qualname}>", "exec")
        except SyntaxError as e:
            out.append(f"{module}.{qualname}: the guards' replacements do not compile: {e}")
    return out
