"""Raise a process's open-file limit at start, so a node meshing with many peers does not
stop at the usual soft limit of 1,024 descriptors while the hard limit allows far more.

Every peer costs a node about two descriptors (its SUB and DEALER connections), and a tower
four; at 1,024 a tower stops admitting nodes at about 250 of them. The soft limit is raised
to the hard limit, capped at :data:`WANTED` (a higher one only hides a descriptor leak).
"""

from __future__ import annotations

import logging
import resource
from dataclasses import dataclass

log = logging.getLogger(__name__)

WANTED = 65_536
"""The soft limit asked for (or the hard limit, when lower)."""


@dataclass(frozen=True)
class FdLimit:
    before: int
    after: int
    hard: int


def raise_fd_limit(wanted: int = WANTED) -> FdLimit:
    """Raise RLIMIT_NOFILE's soft limit towards ``wanted`` (never above the hard limit, never
    lowered); a refusal by the system leaves it as it was."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:
            log.warning("fd_limit.unchanged soft=%d hard=%d error=%s", soft, hard, exc)
            return FdLimit(soft, soft, hard)
        log.debug("fd_limit.raised from=%d to=%d hard=%d", soft, target, hard)
        return FdLimit(soft, target, hard)
    return FdLimit(soft, soft, hard)
