"""A node's keys and who it lets in: Ed25519 identity, CURVE keys, the client gate."""
