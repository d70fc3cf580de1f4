"""Outside tools a test needs (kcat, promtool, chromium): skipped without them, but failed
under ``CI=true``, where ``make install`` brings them and a missing one is a broken install,
not a reason to skip."""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest


def skip_or_fail(reason: str) -> NoReturn:
    """Skip the test for ``reason``; under ``CI=true`` fail it instead."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}, and CI=true: failing instead of skipping", pytrace=False)
    pytest.skip(reason)


def require_tool(tool: str, package: str) -> str:
    """The path of ``tool`` (from the Debian ``package``), or :func:`skip_or_fail`."""
    path = shutil.which(tool)
    if path is None:
        skip_or_fail(f"{tool} missing (Debian package {package}; `make install` as root brings it)")
    return path
