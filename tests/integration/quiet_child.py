"""Child of ``test_quiet_library``: producers started as a Spark executor starts them.

    python -m tests.integration.quiet_child TOWERS [logging]

With ``logging`` it configures logging first (``basicConfig`` at warning), as an
application that wants our warnings does.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":
    if sys.argv[2:] == ["logging"]:
        import logging

        logging.basicConfig(level=logging.WARNING)
    from dafka import Producer

    for _ in range(2):  # a Spark executor starts a producer per task
        Producer("quiet", towers=sys.argv[1]).close(timeout=0)
