"""Every command raises its open-file soft limit towards the hard one at start."""

from __future__ import annotations

import resource
import subprocess
import sys

LOWERED = """
import resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
sys.argv = ["dafka-keys", "--version"]
from dafka.cli.keys import main
try:
    main()
finally:
    print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], file=sys.stderr)
"""


def test_a_command_started_with_a_low_soft_limit_raises_it() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    done = subprocess.run(
        [sys.executable, "-c", LOWERED], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    soft = int(done.stderr.strip().splitlines()[-1])
    expected = 65_536 if hard == resource.RLIM_INFINITY else min(65_536, hard)
    assert soft == expected > 256


def test_the_limit_is_never_lowered_nor_raised_past_the_hard_limit() -> None:
    code = (
        "import resource\n"
        "from dafka.io.fd_limit import raise_fd_limit\n"
        "s, h = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (300, 400))\n"
        "a = raise_fd_limit()\n"
        "b = raise_fd_limit(wanted=100)\n"
        "print(a.before, a.after, a.hard, b.before, b.after)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["300", "400", "400", "400", "400"]
