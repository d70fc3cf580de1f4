"""Cluster metadata replicated by the towers' Raft group (DESIGN §6).

:mod:`.state` is the state machine, :mod:`.client` the admin client and
:mod:`.follower` the view a node keeps of it.
"""

from .client import DEFAULT_CLUSTER, MetadataClient, raft_url
from .follower import MetadataView
from .state import MetadataStateMachine

__all__ = ["DEFAULT_CLUSTER", "MetadataClient", "MetadataStateMachine", "MetadataView", "raft_url"]
