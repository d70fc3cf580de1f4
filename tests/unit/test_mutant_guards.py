"""Guard markers (tests/mutant_guards.py) and their conversion (tests/mutant_convert.py).

Each test writes a small package of its own in a temporary directory (a fresh name, on
``sys.path``), marks statements in it, and checks what the attack mutant machinery makes of
them: the mutant follows its marker to another module or class, a header spanning lines is
replaced whole and its body kept, a missing or repeated slug is an error naming it, and
marked source is stable under ruff format.
"""

from __future__ import annotations

import importlib
import itertools
import runpy
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import attack_mutants, mutant_convert, mutant_guards
from tests.mutant_guards import Guard, GuardError

_names = itertools.count()


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """A fresh, importable, empty package, the only one scanned for markers."""
    name = f"guardpkg_{next(_names)}"
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(mutant_guards, "PACKAGES", (name,))
    mutant_guards.clear_caches()
    yield name, root
    mutant_guards.clear_caches()
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def write(root: Path, relative: str, source: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source).lstrip("\n"))
    mutant_guards.clear_caches()
    importlib.invalidate_caches()


def install(guards: list[Guard]) -> None:
    for module, qualname, source in mutant_guards.sources(guards):
        attack_mutants._install("test", module, qualname, source)


CHECK = """
    def check(x):
        # guard: refuses-negative
        if x < 0:
            raise ValueError(x)
        return x
"""


def test_a_marker_names_its_module_and_function(package: tuple[str, Path]) -> None:
    name, root = package
    write(root, "a.py", CHECK)
    site = mutant_guards.locate("refuses-negative")
    assert (site.module, site.qualname) == (f"{name}.a", "check")
    module = importlib.import_module(f"{name}.a")
    with pytest.raises(ValueError):
        module.check(-1)
    install([Guard("refuses-negative", "if False:")])
    assert module.check(-1) == -1


def test_the_mutant_follows_its_function_to_another_module_and_class(
    package: tuple[str, Path],
) -> None:
    name, root = package
    write(
        root,
        "sub/b.py",
        """
        class Outer:
            class Checker:
                def check(self, x):
                    def nested():
                        # guard: refuses-negative
                        if x < 0:
                            raise ValueError(x)

                    nested()
                    return x
        """,
    )
    write(root, "sub/__init__.py", "")
    site = mutant_guards.locate("refuses-negative")
    assert (site.module, site.qualname) == (f"{name}.sub.b", "Outer.Checker.check")
    module = importlib.import_module(f"{name}.sub.b")
    checker = module.Outer.Checker()
    with pytest.raises(ValueError):
        checker.check(-1)
    install([Guard("refuses-negative", "if False:")])
    assert checker.check(-1) == -1


def test_a_multi_line_header_is_replaced_whole_and_its_body_kept(
    package: tuple[str, Path],
) -> None:
    name, root = package
    write(
        root,
        "a.py",
        """
        def check(x, log):
            # guard: bounded
            if (
                x < 0
                or x > 10
            ):
                log.append(x)
                raise ValueError(x)
            total = sum(  # guard: summed
                [x, 1],
            )
            return total
        """,
    )
    (source,) = [s for _, _, s in mutant_guards.sources([Guard("bounded", "if x > 100:")])]
    assert "    if x > 100:\n        log.append(x)\n        raise ValueError(x)\n" in source
    assert "x < 0" not in source
    install([Guard("bounded", "if False:"), Guard("summed", "total = x")])
    module = importlib.import_module(f"{name}.a")
    assert module.check(-1, []) == -1  # both guards of one function at once


def test_whole_replaces_a_compound_statement_with_its_body(package: tuple[str, Path]) -> None:
    name, root = package
    write(root, "a.py", CHECK)
    (_, _, source), *_ = mutant_guards.sources([Guard("refuses-negative", "pass", whole=True)])
    assert "raise" not in source and "    pass\n    return x" in source
    assert mutant_guards.problems([Guard("refuses-negative", "if False:\n    pass")]) == []
    assert mutant_guards.problems([Guard("refuses-negative", "if False")])  # does not compile


def test_an_elif_and_an_except_clause_can_be_marked(package: tuple[str, Path]) -> None:
    name, root = package
    write(
        root,
        "a.py",
        """
        def check(x):
            if x == 0:
                return "zero"
            # guard: negative
            elif x < 0:
                return "negative"
            try:
                return str(1 // x)
            # guard: catches
            except ZeroDivisionError:
                return "never"
        """,
    )
    install([Guard("negative", "elif False:"), Guard("catches", "except KeyError:")])
    assert importlib.import_module(f"{name}.a").check(-2) == "-1"


def test_a_missing_marker_is_an_error_naming_it(package: tuple[str, Path]) -> None:
    _, root = package
    write(root, "a.py", CHECK)
    with pytest.raises(GuardError, match="'no-such-slug'"):
        mutant_guards.locate("no-such-slug")
    assert "'no-such-slug'" in mutant_guards.problems([Guard("no-such-slug", "pass")])[0]


def test_a_repeated_marker_is_an_error_naming_it_and_both_places(
    package: tuple[str, Path],
) -> None:
    _, root = package
    write(root, "a.py", CHECK)
    write(root, "b.py", CHECK)
    with pytest.raises(GuardError, match="'refuses-negative' marks 2 statements") as error:
        mutant_guards.locate("refuses-negative")
    assert "a.py:2" in str(error.value) and "b.py:2" in str(error.value)


@pytest.mark.parametrize(
    "source, problem",
    [
        ("X = 1  # guard: refuses-negative\n", "not inside a function"),
        (
            "def f():\n    return g(\n        # guard: refuses-negative\n        1,\n    )\n",
            "inside a statement",
        ),
        (
            "def f():\n    if x:\n        pass\n        # guard: refuses-negative\n    return 1\n",
            "not indented as the statement",
        ),
    ],
)
def test_a_misplaced_marker_is_an_error_naming_it(
    package: tuple[str, Path], source: str, problem: str
) -> None:
    _, root = package
    write(root, "a.py", source)
    with pytest.raises(GuardError, match=f"'refuses-negative'.*{problem}"):
        mutant_guards.locate("refuses-negative")


def test_a_marker_in_a_string_is_no_marker(package: tuple[str, Path]) -> None:
    _, root = package
    write(root, "a.py", 'TEXT = "# guard: refuses-negative"\n' + textwrap.dedent(CHECK))
    assert mutant_guards.locate("refuses-negative").qualname == "check"


MARKED = """
def check(x, y):
    # guard: one
    if x:
        return 1
    # guard: two
    elif y and x > y:
        return 2
    try:
        # guard: three
        z = compute(
            x,
            y,
        )
    # guard: four
    except ValueError:  # an existing comment
        z = 0
    return z  # guard: five
"""


def test_marked_source_is_stable_under_ruff_format(tmp_path: Path) -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed")
    path = tmp_path / "marked.py"
    path.write_text(MARKED.lstrip("\n"))
    subprocess.run([ruff, "format", "--line-length", "100", str(path)], check=True)
    assert path.read_text() == MARKED.lstrip("\n")


# ---------------------------------------------------------------------- conversion

OLD_FORM = """
    def check(x, log):
        if x < 0:
            raise ValueError(x)
        log.append(
            x,
        )
        return x


    class Checker:
        def check(self, x):
            if x > 10 and x != 99:
                return None
            return x
"""


def test_the_conversion_marks_the_source_rewrites_the_entries_and_is_idempotent(
    package: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, root = package
    write(root, "a.py", OLD_FORM)
    mutants = {
        "a check refuses negative numbers": (f"{name}.a", "check", "if x < 0:", "if False:"),
        "the check logs what it saw, and bounds it": [
            (f"{name}.a", "check", "        x,\n", "        -x,\n"),
            (f"{name}.a", "Checker.check", " and x != 99", ""),
        ],
        "two edits of one function": (
            f"{name}.a",
            "check",
            "        raise ValueError(x)\n",
            "        pass\n",
            "return x",
            "return -x",
        ),
        "a text found twice": (f"{name}.a", "Checker.check", "x", "y"),
    }
    table = tmp_path / "table.py"
    table.write_text(
        f"from tests.mutant_guards import Guard\n\nMUTANTS: dict[str, object] = {mutants!r}\n"
    )
    monkeypatch.setattr(attack_mutants, "MUTANTS", dict(mutants))
    monkeypatch.setattr(mutant_convert, "MUTANTS_FILE", table)
    assert mutant_convert.convert(list(mutants)) == 1  # the text found twice stays
    converted = runpy.run_path(str(table))["MUTANTS"]
    assert converted["a text found twice"] == mutants["a text found twice"]
    assert converted["a check refuses negative numbers"] == Guard(
        "check-refuses-negative-numbers", "if False:"
    )
    source = (root / "a.py").read_text()
    assert "    # guard: check-refuses-negative-numbers\n    if x < 0:\n" in source
    assert "        # guard: check-logs-what-saw-bounds-2\n        if x > 10" in source
    assert [g.slug for g in converted["two edits of one function"]] == [
        "two-edits-function",
        "two-edits-function-2",
    ]
    for mutant in converted.values():  # every marker there once, and each mutant applies
        if isinstance(mutant, Guard) or isinstance(mutant, list):
            assert mutant_guards.problems(mutant if isinstance(mutant, list) else [mutant]) == []
    monkeypatch.setattr(attack_mutants, "MUTANTS", dict(converted))
    install(converted["two edits of one function"])
    assert importlib.import_module(f"{name}.a").check(-3, []) == 3
    # again, on what it wrote: nothing changes
    before = source, table.read_text()
    assert mutant_convert.convert(list(converted)) == 1
    assert ((root / "a.py").read_text(), table.read_text()) == before


def test_the_conversion_reuses_a_statement_marked_already(
    package: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, root = package
    write(root, "a.py", CHECK)
    mutants = {"refuses less": (f"{name}.a", "check", "if x < 0:", "if x < -1:")}
    table = tmp_path / "table.py"
    table.write_text(f"MUTANTS: dict[str, object] = {mutants!r}\n")
    monkeypatch.setattr(attack_mutants, "MUTANTS", dict(mutants))
    monkeypatch.setattr(mutant_convert, "MUTANTS_FILE", table)
    assert mutant_convert.convert(list(mutants)) == 0
    assert "Guard('refuses-negative', 'if x < -1:')" in table.read_text().replace('"', "'")
    assert (root / "a.py").read_text() == textwrap.dedent(CHECK).lstrip("\n")
