"""Test-wide setup: import path and Hypothesis profiles.

Profiles (choose with ``HYPOTHESIS_PROFILE=<name>``; ``ci`` is the default):

``ci``        deadline off (shared CI machines stall), 50 examples per test
``thorough``  deadline off, 1000 examples per test, for a deliberate long run
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import settings

# Make ``import dafka`` and ``import tests.strategies`` work however pytest is
# started (``pytest`` alone does not put the repository root on sys.path).
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.admin import install_admin_key  # noqa: E402

install_admin_key()  # towers started by tests make it their first admin; clients sign with it

settings.register_profile("ci", deadline=None, max_examples=50)
settings.register_profile("thorough", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
