"""Who a group admits as a member: the writers of ``__group.NAME`` it listens to (pure).

The rule, from the cluster metadata (``docs/groups.md``, "Who may join a group"):

* the group topic's producer ACL, if an admin set one: exactly those node IDs;
* else its consumer ACL, if set: who may read the group's state may take part in it;
* else (a fresh group) a writer is admitted for the topics it may read: a member whose
  heartbeat names a topic whose consumer ACL does not name it is not a member, and a
  commit for a partition of such a topic is not one. A topic without a consumer ACL is
  readable by anyone, so in a cluster without ACLs anyone may join (as in Kafka without
  an authorizer); a member then gets a share, no more (claims and commits are bounded
  by the view and the plan).

Stores enforce the first two (``StoreCore.may_write``); every group reader
(:class:`~dafka.groups.view.GroupView`) enforces all three.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["OPEN", "Admission"]


@dataclass(frozen=True)
class Admission:
    members: frozenset[str] | None = None
    """The group's writers named by the metadata (None: not named, see ``readers``)."""
    readers: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Consumer ACL per topic that has one (a topic absent here is open to all)."""

    def admits(self, member: str, topics: Iterable[str]) -> bool:
        """Whether ``member`` may take part in the group for ``topics``."""
        if self.members is not None:
            # guard: group-admits-writers-metadata-lets
            return member in self.members
        readers = self.readers
        for topic in topics:
            allowed = readers.get(topic)
            # guard: group-admits-writers-metadata-lets-2
            if allowed is not None and member not in allowed:
                return False
        return True

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None, group_topic: str) -> Admission:
        """The rule for ``group_topic`` in a metadata configuration (None: open)."""
        if config is None:
            return OPEN
        topics: Mapping[str, Mapping[str, Any]] = config.get("topics", {})
        own = topics.get(group_topic) or {}
        for acl in ("producers", "consumers"):
            named = own.get(acl)
            if named is not None:
                return cls(members=frozenset(named))
        readers = {
            name: frozenset(t["consumers"])
            for name, t in topics.items()
            if t.get("consumers") is not None
        }
        return cls(readers=readers)


OPEN = Admission()
"""No metadata: every writer is admitted (the view's other rules still hold)."""
