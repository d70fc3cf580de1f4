"""The Dafka tower: relays discovery beacons (later also hosts the metadata Raft peer)."""

import logging

from .relay import Tower, relay_beacon

logging.getLogger(__name__).addHandler(logging.NullHandler())  # as dafka's: see there

__all__ = ["Tower", "relay_beacon"]
