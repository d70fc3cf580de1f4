"""A signed store whose IO thread stops reading, for ``test_attacks_queues``.

    python -m tests.integration.held_store DATA_DIR TOWER

It starts a store and prints its node ID and data endpoint. On a line on stdin it queues
a call on the store's loop (``NodeLoop.call``) that holds the loop thread: the call
prints ``held`` from that thread and waits for another line on stdin, at most
``HOLD_SECONDS``. Meanwhile the loop reads nothing from its sockets, while libzmq's own
I/O thread goes on receiving into the data SUB's queue up to its high-water mark, as it
does behind a store busy verifying or committing. (SIGSTOP would stop libzmq's thread
too, and nothing would be received.)
"""

from __future__ import annotations

import sys
import threading

from dafka import Store
from dafka.core.effects import Publish

HOLD_SECONDS = 120.0  # the test kills the process long before


def main() -> None:
    data_dir, tower = sys.argv[1], sys.argv[2]
    released = threading.Event()

    def hold(now: float) -> list[Publish]:
        print("held", file=sys.stderr, flush=True)
        released.wait(HOLD_SECONDS)
        print("released", file=sys.stderr, flush=True)
        return []

    with Store(data_dir, towers=tower, metadata=False) as store:
        print(f"store {store.node_id} on {store.endpoint}", file=sys.stderr, flush=True)
        sys.stdin.readline()
        store._loop.call(hold)
        sys.stdin.readline()
        released.set()


if __name__ == "__main__":
    main()
