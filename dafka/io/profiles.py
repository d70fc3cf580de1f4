"""The wire profiles, where the IO shell and the node facades have always found them.

The codec itself is :mod:`dafka.wire.profiles`, below the cores (which import it from
there: nothing in ``dafka.core`` imports ``dafka.io``); this module re-exports it
unchanged, so ``dafka.io.profiles.X is dafka.wire.profiles.X`` for every name.
"""

from __future__ import annotations

from ..wire.profiles import (
    DEFAULT_PROFILE,
    PROFILE_NAMES,
    RFC46,
    Opened,
    OtherProfile,
    Profile,
    Rfc46Profile,
    SignedProfile,
    check_profile_name,
    make_profile,
    records_of,
    wall_ms,
)

__all__ = [
    "DEFAULT_PROFILE",
    "PROFILE_NAMES",
    "RFC46",
    "Opened",
    "OtherProfile",
    "Profile",
    "Rfc46Profile",
    "SignedProfile",
    "check_profile_name",
    "make_profile",
    "records_of",
    "wall_ms",
]
