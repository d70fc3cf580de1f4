"""The test suite's metadata admin key: towers started by tests make it their first admin.

``tests/conftest.py`` writes it to a private temporary file and points
``$DAFKA_ADMIN_KEY`` at it, so :class:`~dafka.metadata.MetadataClient` and the ``dafka``
command (children inherit the environment) sign with it by default.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from dafka.metadata.signing import ADMIN_KEY_ENV
from dafka.metadata.state import MetadataStateMachine, command, signed_command
from dafka.security.identity import Identity, create_file

ADMIN = Identity.from_seed(bytes(range(200, 232)))
ADMIN_HEX = ADMIN.public_key.hex()
ATTACKER = Identity.from_seed(bytes(range(150, 182)))


def install_admin_key() -> Path:
    """Write :data:`ADMIN` to a fresh 0600 file and set ``$DAFKA_ADMIN_KEY`` to it."""
    path = Path(tempfile.mkdtemp(prefix="dafka-test-admin-")) / "admin.key"
    create_file(path, ADMIN, what="admin key")
    os.environ[ADMIN_KEY_ENV] = str(path)
    return path


def tower_args() -> list[str]:
    """dafka-tower options making :data:`ADMIN` the first admin."""
    return ["--admin-key", ADMIN_HEX]


def admin_sm(cluster: str = "dafka") -> MetadataStateMachine:
    """A state machine whose log began with ``admins.init`` of :data:`ADMIN`."""
    sm = MetadataStateMachine(cluster=cluster)
    assert sm.apply_data(command("admins.init", admins=[ADMIN_HEX])) is None
    return sm


def signed(sm: MetadataStateMachine, op: str, by: Identity = ADMIN, **fields: object) -> bytes:
    """``op`` signed by ``by`` against ``sm``'s current revision."""
    data, _ = signed_command(by, sm.cluster_name, sm.revision, op, **fields)
    return data
