"""Run a command as ``python -m MODULE ARGS`` would, with Ctrl-C arriving when TARGET is
imported: ``python -m tests.e2e.interrupt_import TARGET MODULE ARGS...``.

A deterministic stand-in for a user's Ctrl-C during a command's start-up (the imports
took 0.4 to 2.5 s before issue 34), for tests/e2e/test_cli_honest_exits.py.
"""

from __future__ import annotations

import importlib.abc
import runpy
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


class _InterruptAt(importlib.abc.MetaPathFinder):
    def __init__(self, target: str) -> None:
        self.target = target

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == self.target:
            raise KeyboardInterrupt
        return None


def main() -> None:
    target, module = sys.argv[1], sys.argv[2]
    sys.meta_path.insert(0, _InterruptAt(target))
    sys.argv = [module, *sys.argv[3:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
