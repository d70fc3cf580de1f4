"""Rewrite the exact-text attack mutants into guard markers, on whatever the tree holds now.

    python -m tests.mutant_convert            # convert every old-form mutant it can
    python -m tests.mutant_convert --dry-run  # say what it would do, write nothing
    python -m tests.mutant_convert NAME ...   # only these mutants

For each old-form mutant of ``tests/attack_mutants.py`` (``(module, qualname, old, new, ...)``
or a list of them) it finds the statement each ``old`` text lies in (the header of a compound
statement when the text is in the header, the whole compound statement when the text runs from
its header into its body, else the simple statement), puts a marker comment
``# guard: <slug>`` on its own line just above that statement in the source file (its own line:
it never makes a line longer than the 100 columns ruff allows, and ruff format keeps a comment
above the statement it precedes), and rewrites the mutant as ``Guard(slug, replacement)``: the
statement's lines with ``old`` replaced by ``new``. A statement that is marked already keeps
its slug (two mutants may share a site). Slugs come from the mutant's name: kebab-case, at
most five words, unique in the tree.

A mutant converts only if the result is the same mutant: the function source the guards make
must parse to the same tree as the old text replacement did (checked before writing, and again
on the written files); else it stays as it was, in the old form, and is reported with why
(an ``old`` text found twice or not at all, a text spanning two statements, ...). Mutants
already in the marker form are left alone, so running it again changes nothing. Exit status
1 when some mutant could not be converted.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tests import attack_mutants, mutant_guards
from tests.mutant_guards import Guard, Parsed

MUTANTS_FILE = Path(attack_mutants.__file__)
_STOP = set(
    "a an the its it of to is are and or in on for by with that as at be from only once "
    "s t any every no not one ones than into".split()
)


class Unconvertible(Exception):
    pass


@dataclass
class Unit:
    """A statement to mark: the marker goes above its first line."""

    path: Path
    start: int  # 1-based
    indent: str
    slug: str = ""  # its marker's, existing or to be made


@dataclass
class Edit:
    """One mutant's change to one marked statement: its lines ``start``..``end``, edited."""

    unit: Unit
    end: int
    whole: bool
    function: tuple[int, int]  # its function's first and last lines
    changes: list[tuple[int, int, str]] = field(default_factory=list)  # file offsets, new


def _function(path: Path, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """The definition of ``qualname`` in the file (through classes and module-level blocks)."""
    parsed = mutant_guards._parsed(path)
    want = qualname.split(".")
    found = None  # the last definition: the one that runs (after any @overload)
    for stmt, parents in parsed.statements:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if stmt.name != want[-1]:
            continue
        if any(isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)) for p in parents):
            continue
        if [p.name for p in parents if isinstance(p, ast.ClassDef)] == want[:-1]:
            found = stmt
    if found is None:
        raise Unconvertible(f"no definition of {qualname} in {path}")
    return found


def _offsets(lines: list[str]) -> list[int]:
    """Offset of each line's start (0-based line index), and of the end."""
    out = [0]
    for line in lines:
        out.append(out[-1] + len(line))
    return out


def _unit(parsed: Parsed, func: ast.stmt, first: int, last: int) -> tuple[int, int, bool]:
    """The statement (``start``, ``end``, ``whole``) lines ``first``..``last`` lie in."""
    around = [
        (s, p)
        for s, p in parsed.statements
        if s.lineno <= first and last <= (s.end_lineno or s.lineno) and func in p
    ]
    if not around:
        raise Unconvertible(f"lines {first}-{last} are not in a statement of the function")
    stmt, parents = max(around, key=lambda sp: len(sp[1]))
    # the statement the marker above its line will find: the outermost starting there
    stmt = min(
        (s for s, p in parsed.statements if s.lineno == stmt.lineno and func in p),
        key=lambda s: len(next(p for t, p in parsed.statements if t is s)),
    )
    header_end = parsed.header_end(stmt)
    end = stmt.end_lineno or stmt.lineno
    if last <= header_end:
        return stmt.lineno, header_end, False
    if first > header_end and isinstance(stmt, mutant_guards._COMPOUND):
        raise Unconvertible(f"lines {first}-{last} span several statements")
    return stmt.lineno, end, end != header_end


def _slug(name: str, taken: set[str]) -> str:
    words = [w for w in re.findall(r"[a-z0-9]+", name.lower()) if w not in _STOP]
    kept: list[str] = []
    for word in words[:5]:
        if kept and len("-".join([*kept, word])) > 40:
            break
        kept.append(word)
    base = "-".join(kept) or "guard"
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug


def _existing_slug(parsed: Parsed, start: int) -> str | None:
    """The slug of a marker already on this statement's own line(s) just above it."""
    line = start - 1
    while line >= 1 and parsed.lines[line - 1].strip().startswith("#"):
        match = mutant_guards.MARKER.search(parsed.lines[line - 1].rstrip("\n"))
        if match:
            return match.group(1)
        line -= 1
    return None


def _plan(name: str, units: dict[tuple[Path, int], Unit]) -> tuple[list[Edit], str]:
    """This mutant's edits (their units registered in ``units``) and its mutated tree."""
    spec = attack_mutants.MUTANTS[name]
    parts = spec if isinstance(spec, list) else [spec]
    mine: dict[tuple[Path, int], Edit] = {}
    expected = []
    for part in parts:
        if not isinstance(part, tuple):
            raise Unconvertible("mixes guards and old-form entries")
        module_name, qualname, *pairs = part
        if module_name.split(".")[0] not in mutant_guards.PACKAGES:
            raise Unconvertible(f"{module_name} is not in {', '.join(mutant_guards.PACKAGES)}")
        module = importlib.import_module(module_name)
        path = Path(module.__file__ or "")
        parsed = mutant_guards._parsed(path)
        func = _function(path, qualname)
        start = min([func.lineno, *(d.lineno for d in func.decorator_list)])
        offsets = _offsets(parsed.lines)
        base = offsets[start - 1]
        text = "".join(parsed.lines[start - 1 : func.end_lineno])
        current = text
        for old, new in zip(pairs[::2], pairs[1::2], strict=True):
            if current.count(old) != 1 or text.count(old) != 1:
                raise Unconvertible(f"{old!r} is in {qualname} {text.count(old)} times")
            current = current.replace(old, new)
            while old.endswith("\n") and new.endswith("\n"):
                old, new = old[:-1], new[:-1]
            while old.startswith("\n") and new.startswith("\n"):
                old, new = old[1:], new[1:]
            if text.count(old) != 1:
                raise Unconvertible(f"{old!r} is in {qualname} {text.count(old)} times")
            a = base + text.index(old)
            b = a + len(old)
            first = _line_of(offsets, a)
            last = _line_of(offsets, max(a, b - 1))
            s, e, whole = _unit(parsed, func, first, last)
            unit = units.setdefault((path, s), Unit(path, s, _indent(parsed, s)))
            edit = mine.setdefault(
                (path, s), Edit(unit, e, whole, (start, func.end_lineno or start))
            )
            edit.end, edit.whole = max(edit.end, e), edit.whole or whole
            edit.changes.append((a, b, new))
        expected.append(ast.dump(ast.parse(mutant_guards.dedent(current))))
    return list(mine.values()), "\n".join(sorted(expected))


def _line_of(offsets: list[int], offset: int) -> int:
    lo, hi = 0, len(offsets) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if offsets[mid] <= offset:
            lo = mid
        else:
            hi = mid
    return lo + 1


def _indent(parsed: Parsed, line: int) -> str:
    text = parsed.lines[line - 1]
    return text[: len(text) - len(text.lstrip(" \t"))]


def _replacement(edit: Edit) -> str:
    """The edited statement's lines, without the statement's indentation."""
    unit = edit.unit
    parsed = mutant_guards._parsed(unit.path)
    offsets = _offsets(parsed.lines)
    lo, hi = offsets[unit.start - 1], offsets[edit.end]
    text = "".join(parsed.lines[unit.start - 1 : edit.end])
    for a, b, new in sorted(edit.changes, reverse=True):
        if not lo <= a <= b <= hi:
            raise Unconvertible("an edit runs out of its statement")
        text = text[: a - lo] + new + text[b - lo :]
    if not text:  # the statement deleted: a blank line in its place
        return ""
    if not text.endswith("\n"):
        raise Unconvertible("an edit joins the statement with the next line")
    out = []
    for line in text[:-1].split("\n"):
        if line.strip() and not line.startswith(unit.indent):
            raise Unconvertible("a replacement line is less indented than its statement")
        out.append(line[len(unit.indent) :] if line.strip() else "")
    return "\n".join(out)


def _literal(guards: list[Guard]) -> str:
    def one(g: Guard) -> str:
        extra = ", whole=True" if g.whole else ""
        return f"Guard({_string(g.slug)}, {_string(g.replacement)}{extra})"

    if len(guards) == 1:
        return one(guards[0])
    return "[" + ", ".join(one(g) for g in guards) + "]"


def _string(s: str) -> str:
    body = repr(s)
    if body.startswith("'") and '"' not in s:
        body = '"' + body[1:-1].replace("\\'", "'") + '"'
    return body


def _mutated_dump(guards: list[Guard]) -> str:
    """The mutated functions' trees, as the guards make them from the files."""
    return _dump(src for _, _, src in mutant_guards.sources(guards))


def _simulated_dump(edits: list[Edit], replacements: list[str]) -> str:
    """The mutated functions' trees, as the guards will make them once marked."""
    functions: dict[tuple[Path, tuple[int, int]], list[tuple[Edit, str]]] = {}
    for edit, replacement in zip(edits, replacements, strict=True):
        functions.setdefault((edit.unit.path, edit.function), []).append((edit, replacement))
    out = []
    for (path, (start, end)), changes in functions.items():
        lines = mutant_guards._parsed(path).lines[start - 1 : end]
        for edit, replacement in sorted(changes, key=lambda c: -c[0].unit.start):
            a, b = edit.unit.start - start + 1, edit.end - start + 1
            lines = mutant_guards.replace_lines(lines, a, b, replacement)
        out.append("".join(lines))
    return _dump(out)


def _dump(sources: Iterable[str]) -> str:
    return "\n".join(sorted(ast.dump(ast.parse(mutant_guards.dedent(s))) for s in sources))


def convert(names: list[str], dry_run: bool = False) -> int:
    """Convert these mutants; return how many could not be."""
    mutant_guards.clear_caches()
    taken = set(mutant_guards.all_sites())
    units: dict[tuple[Path, int], Unit] = {}
    plans: dict[str, tuple[list[Edit], list[str], str]] = {}
    failed = 0
    for name in names:
        spec = attack_mutants.MUTANTS[name]
        if not spec or isinstance(spec, Guard):
            continue
        if isinstance(spec, list) and any(isinstance(p, Guard) for p in spec):
            continue
        known = set(units)
        try:
            edits, expected = _plan(name, units)
            replacements = [_replacement(e) for e in edits]
            if _simulated_dump(edits, replacements) != expected:
                raise Unconvertible("its guards would not make the mutant its old text makes")
        except (Unconvertible, OSError, SyntaxError, ImportError, AttributeError) as e:
            for key in set(units) - known:
                del units[key]
            print(f"NOT CONVERTED  {name}: {e}")
            failed += 1
            continue
        plans[name] = (edits, replacements, expected)
    for unit in units.values():  # a statement marked already keeps its marker
        parsed = mutant_guards._parsed(unit.path)
        unit.slug = _existing_slug(parsed, unit.start) or ""
    for name, (edits, _, _) in plans.items():
        for edit in edits:
            if not edit.unit.slug:
                edit.unit.slug = _slug(name, taken)
    guards = {
        name: [Guard(e.unit.slug, r, e.whole) for e, r in zip(edits, reps, strict=True)]
        for name, (edits, reps, _) in plans.items()
    }
    for name, gs in guards.items():
        print(f"convert  {name}: {', '.join(g.slug for g in gs)}")
    if dry_run or not plans:
        return failed
    _write_markers(list(units.values()))
    _write_entries(guards)
    mutant_guards.clear_caches()
    for name, (_, _, expected) in plans.items():  # the same mutant, from the written files
        try:
            same = _mutated_dump(guards[name]) == expected
        except mutant_guards.GuardError as e:
            print(f"BROKEN  {name}: {e}")
            failed += 1
            continue
        if not same:
            print(f"BROKEN  {name}: the guards do not make the mutant the old text did")
            failed += 1
    return failed


def _write_markers(units: list[Unit]) -> None:
    by_path: dict[Path, list[Unit]] = {}
    for unit in units:
        by_path.setdefault(unit.path, []).append(unit)
    for path, file_units in by_path.items():
        parsed = mutant_guards._parsed(path)
        lines = list(parsed.lines)
        for unit in sorted(file_units, key=lambda u: -u.start):
            if _existing_slug(parsed, unit.start) == unit.slug:
                continue
            lines.insert(unit.start - 1, f"{unit.indent}# guard: {unit.slug}\n")
        path.write_text("".join(lines), encoding="utf-8")


def _write_entries(guards: dict[str, list[Guard]]) -> None:
    text = MUTANTS_FILE.read_text(encoding="utf-8")
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    offsets = _offsets(lines)
    table = next(
        n.value
        for n in tree.body
        if isinstance(n, ast.AnnAssign)
        and isinstance(n.target, ast.Name)
        and n.target.id == "MUTANTS"
    )
    assert isinstance(table, ast.Dict)
    edits = []
    for key, value in zip(table.keys, table.values, strict=True):
        if isinstance(key, ast.Constant) and key.value in guards:
            a = offsets[value.lineno - 1] + _col(lines[value.lineno - 1], value.col_offset)
            end_line = value.end_lineno or value.lineno
            b = offsets[end_line - 1] + _col(lines[end_line - 1], value.end_col_offset or 0)
            edits.append((a, b, _literal(guards[key.value])))
    for a, b, new in sorted(edits, reverse=True):
        text = text[:a] + new + text[b:]
    MUTANTS_FILE.write_text(text, encoding="utf-8")
    ruff = Path(sys.executable).parent / "ruff"
    if ruff.exists():
        subprocess.run(
            [str(ruff), "format", "--quiet", "--line-length", "100", str(MUTANTS_FILE)],
            check=False,
        )


def _col(line: str, utf8_col: int) -> int:
    """A character column from the syntax tree's UTF-8 byte column."""
    return len(line.encode("utf-8")[:utf8_col].decode("utf-8"))


def main() -> None:
    args = sys.argv[1:]
    dry_run = "--dry-run" in args
    names = [a for a in args if a != "--dry-run"] or list(attack_mutants.MUTANTS)
    unknown = [n for n in names if n not in attack_mutants.MUTANTS]
    if unknown:
        raise SystemExit(f"no such mutant: {', '.join(unknown)}")
    failed = convert(names, dry_run)
    print(f"{failed} mutant(s) not converted" if failed else "every mutant converted")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
