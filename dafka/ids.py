"""Node IDs and topic names: what the wire accepts, checked at the edge."""

from __future__ import annotations

import re
import unicodedata
import uuid

from .errors import InvalidTopic

MAX_TOPIC_BYTES = 255
GROUP_TOPIC_PREFIX = "__group."
"""A consumer group's state lives on the internal topic ``__group.NAME`` (docs/groups.md)."""
_NODE_ID = re.compile(r"[0-9A-F]{32}\Z")


def new_node_id() -> str:
    """A fresh random node ID: 32 upper-case hex characters, as the reference writes them."""
    return uuid.uuid4().hex.upper()


def is_node_id(text: str) -> bool:
    return bool(_NODE_ID.match(text))


def is_group_topic(topic: str) -> bool:
    """Whether ``topic`` is a consumer group's internal topic, not a user topic."""
    return topic.startswith(GROUP_TOPIC_PREFIX)


def check_topic(topic: str) -> str:
    """Return ``topic`` if the wire can carry it, else raise :class:`InvalidTopic`."""
    if not isinstance(topic, str):
        raise InvalidTopic(f"topic must be a string, not {type(topic).__name__}")
    raw = topic.encode("utf-8", "surrogatepass")
    if not raw:
        raise InvalidTopic("topic must not be empty")
    if b"\0" in raw:
        raise InvalidTopic(f"topic {topic!r} contains a NUL byte")
    if len(raw) > MAX_TOPIC_BYTES:
        raise InvalidTopic(f"topic is {len(raw)} bytes long; the limit is {MAX_TOPIC_BYTES}")
    try:
        topic.encode()
    except UnicodeEncodeError as exc:
        raise InvalidTopic(f"topic {topic!r} is not valid UTF-8") from exc
    return topic


_LINE_BREAKS = frozenset("\u2028\u2029\x85")  # also Unicode's line/paragraph separators


def check_topic_name(topic: str) -> str:
    """:func:`check_topic`, and no control character, newline or line separator: what a
    topic *name* may hold where one enters (the command line, the API, a topic.create in
    the metadata, whoever proposed it). A name with ``\n`` in it broke every line-based
    output that shows it (``topic partition low high``, logs) and could forge lines there.
    Names the wire carries already (in a store, a snapshot) are read with the looser
    :func:`check_topic`."""
    check_topic(topic)
    for char in topic:
        # guard: topic-name-control-character-refused
        if char in _LINE_BREAKS or unicodedata.category(char) == "Cc":
            raise InvalidTopic(
                f"topic {topic!r} contains a control character ({ascii(char)}): a topic "
                "name is printable text"
            )
    return topic
