"""Shared Hypothesis strategies (and the golden-vector loader) for Dafka tests.

Import as ``from tests.strategies import ...`` (``tests/conftest.py`` puts the
repository root on ``sys.path``, so this works under plain ``pytest`` too).

Value strategies
    ``node_ids``        32 upper-case hex characters, as the reference writes UUIDs
    ``topics``          every topic ``dafka.ids.check_topic`` accepts (1..255 UTF-8 bytes, no NUL)
    ``ascii_topics``    short readable topics, for tests that print them
    ``offsets``         u64 offsets, biased towards small values and the edges
    ``counts``          u32 FETCH counts, likewise
    ``contents``        record payloads
    ``field_texts``     any text a 1-octet-length string field can carry (NUL allowed)

rfc46 message strategies (one per type, plus ``rfc46_messages`` for all of them)
    ``records``, ``direct_records``, ``fetches``, ``acks``, ``heads``,
    ``direct_heads``, ``get_heads``, ``consumer_hellos``, ``store_hellos``.
    With ``wide=True`` the node-id fields hold arbitrary text instead of node
    ids: still encodable, useful for codec robustness tests, not for node logic.

Beacons
    ``hosts``, ``ports``, ``node_beacons``, ``tower_beacons``.

Garbage
    ``frame_lists``     lists of random binary frames.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st

from dafka.ids import MAX_TOPIC_BYTES
from dafka.wire import rfc46
from dafka.wire.beacon import NodeBeacon, TowerBeacon

U64_MAX = 2**64 - 1
U32_MAX = 2**32 - 1

DATA_DIR = Path(__file__).resolve().parent / "data"
WIRE_DATA_DIR = DATA_DIR / "wire"

# ------------------------------------------------------------------ plain values

_HEX = "0123456789ABCDEF"


def node_ids() -> st.SearchStrategy[str]:
    """Node ids as the reference writes them: 32 upper-case hex characters."""
    return st.text(alphabet=_HEX, min_size=32, max_size=32)


def _clip_utf8(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, on a character boundary."""
    return text.encode()[:limit].decode("utf-8", "ignore")


_NO_NUL_CHARS = st.characters(codec="utf-8", exclude_characters="\x00")
_ANY_CHARS = st.characters(codec="utf-8")
_PRINTABLE_ASCII = st.characters(min_codepoint=0x21, max_codepoint=0x7E)


def topics(max_bytes: int = MAX_TOPIC_BYTES) -> st.SearchStrategy[str]:
    """Valid topic names: 1..``max_bytes`` UTF-8 bytes, no NUL, non-ASCII included."""
    return st.one_of(
        st.text(_NO_NUL_CHARS, min_size=1, max_size=24),
        st.text(_NO_NUL_CHARS, min_size=1, max_size=max_bytes).map(
            lambda t: _clip_utf8(t, max_bytes)
        ),
        # right at the byte limit
        st.text(_PRINTABLE_ASCII, min_size=max_bytes, max_size=max_bytes),
    ).filter(bool)


def ascii_topics() -> st.SearchStrategy[str]:
    """Short, readable topics (letters, digits, ``.-_/``)."""
    return st.text(
        alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_/",
        min_size=1,
        max_size=16,
    )


def field_texts(max_bytes: int = 255) -> st.SearchStrategy[str]:
    """Any text a ``string`` field can carry (may be empty or contain NUL)."""
    return st.text(_ANY_CHARS, max_size=max_bytes).map(lambda t: _clip_utf8(t, max_bytes))


def _slot_texts() -> st.SearchStrategy[str]:
    """Any text the frame-0 topic slot can carry (no NUL)."""
    return st.text(_NO_NUL_CHARS, max_size=64)


def offsets() -> st.SearchStrategy[int]:
    """u64 offsets, biased towards small values and the edges."""
    return st.one_of(
        st.integers(0, 1000),
        st.sampled_from([0, 1, 255, 256, U32_MAX, U32_MAX + 1, 2**63, U64_MAX - 1, U64_MAX]),
        st.integers(0, U64_MAX),
    )


def counts() -> st.SearchStrategy[int]:
    """u32 FETCH counts, biased towards small values and the edges."""
    return st.one_of(
        st.integers(0, 1000),
        st.sampled_from([0, 1, 100_000, 2**31, U32_MAX]),
        st.integers(0, U32_MAX),
    )


def contents(max_size: int = 256) -> st.SearchStrategy[bytes]:
    return st.binary(max_size=max_size)


# ------------------------------------------------------------- rfc46 messages


def _ids(wide: bool, in_slot: bool) -> st.SearchStrategy[str]:
    if not wide:
        return node_ids()
    return _slot_texts() if in_slot else field_texts()


def _topics(wide: bool) -> st.SearchStrategy[str]:
    return field_texts() if wide else topics()


def records(wide: bool = False) -> st.SearchStrategy[rfc46.Record]:
    # The RECORD topic is both the frame-0 slot and the subject: never NUL.
    return st.builds(rfc46.Record, topics(), _ids(wide, False), offsets(), contents())


def direct_records(wide: bool = False) -> st.SearchStrategy[rfc46.DirectRecord]:
    return st.builds(
        rfc46.DirectRecord,
        _ids(wide, True),
        _topics(wide),
        _ids(wide, False),
        offsets(),
        contents(),
    )


def fetches(wide: bool = False) -> st.SearchStrategy[rfc46.Fetch]:
    return st.builds(
        rfc46.Fetch, _ids(wide, True), _ids(wide, False), _topics(wide), offsets(), counts()
    )


def acks(wide: bool = False) -> st.SearchStrategy[rfc46.Ack]:
    return st.builds(rfc46.Ack, _ids(wide, True), _topics(wide), offsets())


def heads(wide: bool = False) -> st.SearchStrategy[rfc46.Head]:
    return st.builds(rfc46.Head, topics(), _ids(wide, False), offsets())


def direct_heads(wide: bool = False) -> st.SearchStrategy[rfc46.DirectHead]:
    return st.builds(
        rfc46.DirectHead, _ids(wide, True), _topics(wide), _ids(wide, False), offsets()
    )


def get_heads(wide: bool = False) -> st.SearchStrategy[rfc46.GetHeads]:
    return st.builds(rfc46.GetHeads, topics(), _ids(wide, False))


def consumer_hellos(wide: bool = False) -> st.SearchStrategy[rfc46.ConsumerHello]:
    # ``strings`` entries have 4-octet lengths: in wide mode they may exceed 255 bytes.
    entries = st.text(_ANY_CHARS, max_size=300) if wide else topics()
    return st.builds(
        rfc46.ConsumerHello,
        _ids(wide, True),
        _ids(wide, False),
        st.lists(entries, max_size=5).map(tuple),
    )


def store_hellos(wide: bool = False) -> st.SearchStrategy[rfc46.StoreHello]:
    return st.builds(rfc46.StoreHello, _ids(wide, True), _ids(wide, False))


MESSAGE_STRATEGIES = {
    rfc46.Record: records,
    rfc46.DirectRecord: direct_records,
    rfc46.Fetch: fetches,
    rfc46.Ack: acks,
    rfc46.Head: heads,
    rfc46.DirectHead: direct_heads,
    rfc46.GetHeads: get_heads,
    rfc46.ConsumerHello: consumer_hellos,
    rfc46.StoreHello: store_hellos,
}
"""Every rfc46 message type mapped to its strategy factory."""

MESSAGE_TYPES = tuple(MESSAGE_STRATEGIES)


def rfc46_messages(wide: bool = False) -> st.SearchStrategy[rfc46.Message]:
    """Any rfc46 message, every type equally likely."""
    return st.one_of([factory(wide) for factory in MESSAGE_STRATEGIES.values()])


# -------------------------------------------------------------------- beacons


def hosts() -> st.SearchStrategy[str]:
    """Hosts a node may advertise: IPv4/IPv6 literals and DNS-ish names."""
    return st.one_of(
        st.ip_addresses(v=4).map(str),
        st.ip_addresses(v=6).map(str),
        st.from_regex(
            r"[a-z]([a-z0-9-]{0,20}[a-z0-9])?(\.[a-z]([a-z0-9-]{0,10}[a-z0-9])?){0,3}",
            fullmatch=True,
        ),
    )


def ports() -> st.SearchStrategy[int]:
    """Ports a beacon may name (no Dafka node binds one below 1024)."""
    return st.integers(1024, 65535)


def node_beacons(empty_host: bool = True) -> st.SearchStrategy[NodeBeacon]:
    host = st.one_of(st.just(""), hosts()) if empty_host else hosts()
    return st.builds(NodeBeacon, node_ids(), host, ports())


def _endpoint(host: str, port: int) -> str:
    return f"tcp://[{host}]:{port}" if ":" in host else f"tcp://{host}:{port}"


def tower_beacons() -> st.SearchStrategy[TowerBeacon]:
    return st.builds(TowerBeacon, node_ids(), st.builds(_endpoint, hosts(), ports()))


# -------------------------------------------------------------------- garbage


def frame_lists(max_frames: int = 4, max_size: int = 64) -> st.SearchStrategy[list[bytes]]:
    return st.lists(st.binary(max_size=max_size), max_size=max_frames)


# ------------------------------------------------------------- golden vectors


def read_hex_frames(path: Path | str) -> list[bytes]:
    """Frames of a golden ``.hex`` file: one frame per non-comment line.

    Lines starting with ``#`` and blank lines are skipped; whitespace inside a
    line only separates fields for the reader.
    """
    frames = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        frames.append(bytes.fromhex("".join(line.split())))
    return frames


def golden_frames(name: str) -> list[bytes]:
    """Frames of ``tests/data/wire/<name>.hex``."""
    return read_hex_frames(WIRE_DATA_DIR / f"{name}.hex")
