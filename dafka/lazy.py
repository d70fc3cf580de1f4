"""Names a package imports when first used (PEP 562), for the package fronts.

``dafka``, ``dafka.producer``, ``dafka.consumer``, ``dafka.store`` and ``dafka.raft``
each keep a table of ``{name: ".module"}`` and take their ``__getattr__`` and ``__dir__``
from :func:`lazy_exports`: importing a package front loads none of its modules, and a
name, once looked up, is kept in the package (later lookups do not come here).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose names ``table`` maps to the
    (relative) modules that define them."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        vars(sys.modules[package])[name] = value  # once: later lookups do not come here
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
