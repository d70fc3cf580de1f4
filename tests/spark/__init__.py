"""Spark tests; :func:`spark_missing` says why Spark cannot run here, for every test that
skips without it."""

from __future__ import annotations

import importlib.util
import os
import shutil


def spark_missing() -> str | None:
    """Why Spark cannot run here (None: it can): the spark extra or a Java runtime absent."""
    if importlib.util.find_spec("pyspark") is None:
        return "the spark extra (pyspark) is not installed: make install adds it"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime: Spark needs one (make install adds it)"
    return None
