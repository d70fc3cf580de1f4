"""The layers: the node cores (``dafka.core``) sit below the IO shell (``dafka.io``).

A core is sans-IO: it takes messages and the time and returns what to do; the shell owns
the sockets and the clock. So no module of ``dafka.core`` may import ``dafka.io``, neither
directly nor through another module it imports (a wire profile, a storage type): read
from the source, every import a module runs (at the top or inside a function; not under
``if TYPE_CHECKING:``) is followed, and a path from ``dafka.core`` to ``dafka.io`` fails.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "dafka"


def _module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _path_of(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, *, typing_too: bool = False) -> set[str]:
    """The ``dafka`` modules ``path`` imports (and their packages, which import first)."""
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not typing_too:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            found.add(source)
            for alias in node.names:  # ``from . import messages``: a module
                if _path_of(f"{source}.{alias.name}") is not None:
                    found.add(f"{source}.{alias.name}")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    out: set[str] = set()
    for name in found:
        if name == "dafka" or name.startswith("dafka."):
            parts = name.split(".")
            out.update(".".join(parts[:i]) for i in range(2, len(parts) + 1))
    return out


ROLE_CORES = {
    "producer": ("core", "serve", "runs", "recovery"),
    "consumer": (
        *("core", "table", "buffer", "delivery", "end", "fetch", "heads", "partition"),
        "kv_table",
    ),
    "store": (
        *("core", "credits", "gaps", "ingest", "partitions", "policy", "repair"),
        *("replicate", "serve", "state", "waiting"),
    ),
}
"""Each role package's sans-IO modules (the rest of it is its facade and IO half)."""


def _core_modules() -> list[Path]:
    roles = [PACKAGE / role / f"_{name}.py" for role, names in ROLE_CORES.items() for name in names]
    return sorted([*(PACKAGE / "core").rglob("*.py"), *roles])


def test_every_role_core_module_exists() -> None:
    # a module renamed away from ROLE_CORES would silently leave the checks below
    missing = [str(p) for p in _core_modules() if not p.is_file()]
    assert missing == []
    for role in ROLE_CORES:  # and a new module of a role is named here or in its IO half
        assert (PACKAGE / role / "__init__.py").is_file()


def test_nothing_outside_a_role_package_imports_its_private_modules() -> None:
    reached: dict[str, list[str]] = {}
    for top in ("dafka", "tower"):
        for path in sorted((ROOT / top).rglob("*.py")):
            module = _module_of(path)
            for role in ROLE_CORES:
                if module.startswith(f"dafka.{role}"):
                    continue
                private = sorted(
                    name
                    for name in _imports(path, typing_too=True)
                    if name.startswith(f"dafka.{role}._")
                )
                if private:
                    reached.setdefault(module, []).extend(private)
    assert reached == {}


def test_no_core_module_imports_the_io_shell_directly() -> None:
    direct = {
        _module_of(path): sorted(
            name for name in _imports(path, typing_too=True) if name.startswith("dafka.io")
        )
        for path in _core_modules()
    }
    assert {name: io for name, io in direct.items() if io} == {}


def test_no_core_module_reaches_the_io_shell_through_another_module() -> None:
    parents: dict[str, str | None] = {_module_of(p): None for p in _core_modules()}
    todo = list(parents)
    while todo:
        name = todo.pop()
        path = _path_of(name)
        if path is None:
            continue
        for imported in _imports(path):
            if imported not in parents:
                parents[imported] = name
                todo.append(imported)
    reached = sorted(name for name in parents if name.startswith("dafka.io"))
    chains = []
    for name in reached:
        chain = [name]
        while (up := parents[chain[-1]]) is not None:
            chain.append(up)
        chains.append(" <- ".join(chain))
    assert chains == []


def test_importing_every_core_module_loads_nothing_of_the_io_shell() -> None:
    names = [_module_of(p) for p in _core_modules()]
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.startswith('dafka.io')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_the_walk_sees_relative_absolute_and_module_imports() -> None:
    # the checks above would pass vacuously if the walk found no imports at all
    shell = _imports(PACKAGE / "io" / "node.py")
    assert {"dafka.io.node_plugins", "dafka.core.discovery", "dafka.wire.beacon"} <= shell
    assert {"dafka.wire.rfc46", "dafka.wire.signed"} <= _imports(PACKAGE / "wire" / "profiles.py")
    assert "dafka.wire.profiles" in _imports(PACKAGE / "producer" / "_core.py")
    assert "dafka.store._core" in _imports(PACKAGE / "store" / "__init__.py", typing_too=True)
