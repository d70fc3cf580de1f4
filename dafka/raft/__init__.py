"""Raft over the ØMQ RAFT protocol: a deterministic core, durable storage, peer and client."""
