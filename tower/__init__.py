"""The Dafka tower: relays discovery beacons (later also hosts the metadata Raft peer)."""

from .relay import Tower, relay_beacon

__all__ = ["Tower", "relay_beacon"]
