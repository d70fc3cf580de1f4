"""Typed configuration in one place: frozen dataclasses, parsing and validation.

Tower addresses: a tower binds two ports, an XSUB that nodes publish beacons
to and an XPUB that relays them (the C reference defaults are 5556 and 5557).
We name a tower by its XSUB endpoint, ``HOST:PORT`` or ``tcp://HOST:PORT``;
its XPUB is at ``PORT + 1``. Several towers are a comma-separated list. With
CURVE on (``--curve``, ``docs/security.md``) each tower is named with its public
key too: ``HOST:PORT@KEY`` (KEY: 64 hex characters, what ``dafka-tower --curve``
prints).
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .errors import ConfigError, ProfileError, WireError
from .security.curve_keys import parse_public_key
from .security.identity import node_id_for
from .wire.beacon import MIN_PORT, check_node_host
from .wire.signed_batch import BATCH_FORMATS, DEFAULT_BATCH_FORMAT
from .wire.signed_rich import MAX_RAW_BYTES, codec_named

Profile = Literal["signed", "rfc46"]
PROFILE_NAMES: tuple[str, ...] = ("signed", "rfc46")
DEFAULT_PROFILE: Profile = "signed"

DEFAULT_TOWER_PORT = 5556
DEFAULT_HOST = "127.0.0.1"
_ENDPOINT = re.compile(r"^(?:tcp://)?(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.\-]+):(?P<port>\d+)$")


@dataclass(frozen=True, slots=True)
class TowerAddress:
    """Where one tower listens: ``sub`` receives node beacons, ``pub`` relays them."""

    host: str
    port: int
    key: bytes | None = None
    """The tower's Ed25519 public key (``HOST:PORT@KEY``); CURVE needs it."""

    @property
    def sub(self) -> str:
        return f"tcp://{self.host}:{self.port}"

    @property
    def pub(self) -> str:
        return f"tcp://{self.host}:{self.port + 1}"

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_endpoint(
    text: str, what: str = "endpoint", *, allow_zero: bool = False
) -> tuple[str, int]:
    """Parse ``HOST:PORT`` or ``tcp://HOST:PORT``; raise ConfigError otherwise.

    ``allow_zero`` admits port 0 (pick free ports) for addresses we bind.
    """
    m = _ENDPOINT.match(text.strip())
    if not m:
        raise ConfigError(f"bad {what} {text!r}: expected HOST:PORT or tcp://HOST:PORT")
    port = int(m.group("port"))
    if port == 0 and allow_zero:
        return m.group("host"), 0
    if not 0 < port < 65535:
        raise ConfigError(f"bad {what} {text!r}: port must be between 1 and 65534")
    return m.group("host"), port


def parse_towers(value: str | Iterable[str] | None) -> tuple[TowerAddress, ...]:
    """Parse a comma-separated list (or several) of tower addresses."""
    if value is None:
        return (TowerAddress(DEFAULT_HOST, DEFAULT_TOWER_PORT),)
    items = [value] if isinstance(value, str) else list(value)
    towers: list[TowerAddress] = []
    for item in items:
        for part in str(item).split(","):
            if part.strip():
                address, _, key_text = part.strip().partition("@")
                host, port = parse_endpoint(address, "tower address")
                key = None
                if key_text:
                    key = parse_public_key(key_text)
                towers.append(TowerAddress(host, port, key))
    if not towers:
        raise ConfigError("no tower address given")
    return tuple(dict.fromkeys(towers))


def check_host(host: str) -> str:
    """The address a node binds and advertises; a wildcard cannot be advertised."""
    if host in ("*", "0.0.0.0", "::", ""):
        raise ConfigError(
            f"host {host!r} is a wildcard: give the address peers should connect to, "
            "e.g. --host 127.0.0.1"
        )
    if not re.match(r"^[A-Za-z0-9_.\-:\[\]]+$", host):
        raise ConfigError(f"bad host {host!r}")
    try:
        check_node_host(host)  # what its beacons may announce
    except WireError:
        raise ConfigError(
            f"bad host {host!r}: give an IP address or a DNS name (letters, digits, '-', '.')"
        ) from None
    return host


MESHES = ("topics", "full")
FANOUTS = ("one", "all")


@dataclass(frozen=True, slots=True)
class NodeConfig:
    """What every node shares: towers, the host it binds and advertises, timing."""

    towers: tuple[TowerAddress, ...] = (TowerAddress(DEFAULT_HOST, DEFAULT_TOWER_PORT),)
    host: str = DEFAULT_HOST
    port: int = 0  # 0: an ephemeral port on ``host``
    beacon_interval: float = 1.0
    beacon_timeout: float = 4.0
    high_watermark: int = 1_000_000
    """Most messages one connection's data queue holds (see :attr:`hwm`, which is lower)."""
    max_message_size: int = 16 * 1024 * 1024
    """``ZMQ_MAXMSGSIZE`` of the data SUB: the largest frame a peer may send."""
    queue_bytes: int = 256 * 1024 * 1024
    """Bytes one connection's data queue may hold, in each direction: the high-water marks
    are :meth:`hwm` messages, so that ``hwm * largest frame`` stays within it."""
    curve: bool = False
    """ZMTP CURVE on every socket (``--curve``; off by default, see ``docs/security.md``).
    Every node of a cluster must set it alike."""
    curve_allowed: frozenset[bytes] | None = None
    """Ed25519 public keys of the clients this node's servers accept (None: any key)."""
    mesh: str = "topics"
    """``topics`` (the signed profile's default): the node connects to the stores and to
    the nodes sharing one of its topics, through interest beacons that towers relay by
    topic (``docs/wire.md`` §6.3); ``full``: to every node, as the reference does (rfc46
    nodes always do). Every tower must be of a version that relays interest beacons."""
    tower_fanout: str = "one"
    """Of several towers, which a signed node beacons to: ``one`` (chosen by its node ID,
    the next when it falls silent), whose peers relay its beacon to theirs, so the towers
    must be peered (``dafka-tower --peer``; the towers of a metadata group are by default:
    ``docs/wire.md`` §6.4); ``all``: every tower, for towers that are not peered. rfc46
    nodes beacon to every tower whatever it says, as the reference does."""

    def hwm(self, frame_bytes: int) -> int:
        """A data socket's high-water mark (per connection) for frames of up to
        ``frame_bytes``: as many as fit in :attr:`queue_bytes` (libzmq counts messages, not
        bytes; issue 10: 15.9 MiB frames with bad signatures took a store to 2.1 GB), at
        most :attr:`high_watermark`. For the signed profile: 4 on the data SUB (whose frames
        may reach 4 times ``max_message_size``, :data:`dafka.io.node.OVERSIZE_CEILING_FACTOR`).
        The data XPUB keeps ``high_watermark`` (see :func:`dafka.io.bounds.bound_data_sockets`),
        and so does the rfc46 profile (one unsigned record per message, for interop): 16
        messages stall its stream under load."""
        return max(1, min(self.high_watermark, self.queue_bytes // frame_bytes))

    def validate(self) -> NodeConfig:
        check_host(self.host)
        if self.mesh not in MESHES:
            raise ConfigError(f"mesh must be one of {', '.join(MESHES)}, not {self.mesh!r}")
        if self.tower_fanout not in FANOUTS:
            raise ConfigError(
                f"tower_fanout must be one of {', '.join(FANOUTS)}, not {self.tower_fanout!r}"
            )
        if not 1 <= self.max_message_size <= self.queue_bytes:
            raise ConfigError(
                f"max_message_size ({self.max_message_size}) must be within 1..queue_bytes "
                f"({self.queue_bytes})"
            )
        if not self.towers:
            raise ConfigError("at least one tower is needed")
        if self.curve:
            for tower in self.towers:
                if tower.key is None:
                    raise ConfigError(
                        f"CURVE needs every tower's public key: give --tower {tower}@KEY "
                        "(dafka-tower --curve prints KEY)"
                    )
        # guard: config-beacon-times-finite
        if not (math.isfinite(self.beacon_interval) and math.isfinite(self.beacon_timeout)):
            raise ConfigError("beacon interval and timeout must be finite numbers of seconds")
        if self.beacon_interval <= 0 or self.beacon_timeout <= self.beacon_interval:
            raise ConfigError("beacon timeout must be longer than the beacon interval")
        if not (self.port == 0 or MIN_PORT <= self.port < 65536):
            raise ConfigError(
                f"bad port {self.port}: give 0 (any free port) or {MIN_PORT}..65535 "
                "(beacons never announce a port below 1024)"
            )
        return self


def check_profile(profile: object) -> Profile:
    """``profile`` if it names a wire profile; one clear ConfigError otherwise."""
    if profile == "signed":
        return "signed"
    if profile == "rfc46":
        return "rfc46"
    raise ConfigError(f"unknown wire profile {profile!r}: use one of {', '.join(PROFILE_NAMES)}")


def parse_trusted_stores(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """Store node IDs from a comma-separated list (or several) of node IDs or public keys.

    A node ID is 32 hex characters; a public key 64 (what ``dafka-keys show``
    prints), which is turned into the node ID it owns. Case does not matter.
    """
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else list(value)
    out: list[str] = []
    for item in items:
        for part in str(item).split(","):
            text = part.strip()
            if not text:
                continue
            try:
                raw = bytes.fromhex(text)
            except ValueError:
                raw = b""
            if len(raw) == 16 and len(text) == 32:
                out.append(text.upper())
            elif len(raw) == 32 and len(text) == 64:
                out.append(node_id_for(raw))
            else:
                raise ConfigError(
                    f"bad trusted store {text!r}: give a store's node ID (32 hex characters) "
                    "or public key (64), as dafka-keys show prints them"
                )
    return tuple(dict.fromkeys(out))


MAX_LINGER_MS = 60_000
"""The longest ``linger_ms`` (a minute, as a sanity bound)."""
DEFAULT_LINGER_MS = 1.0
"""A producer's ``linger_ms`` unless it says otherwise (0 in durable mode, where every
``send`` waits for the log anyway): at 10,000 records/s a batch of ten instead of one
every few records, and nothing waits at a low rate (``dafka/producer/_linger.py``)."""


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    """A producer's settings.

    Trust (signed profile): an ACK counts only if the store that signed it is
    in ``trusted_stores`` (node IDs). With no trusted stores the producer
    trusts any store whose ACK signature verifies: ``trust_any_store=None``
    (the default) allows that with a logged warning, meant for a local
    platform; ``True`` chooses it explicitly; ``False`` refuses to start
    without trusted stores.
    """

    state_dir: Path | None = None
    head_interval: float = 1.0
    max_unacked_bytes: int = 128 * 1024 * 1024
    on_full: Literal["block", "raise"] = "block"
    min_acks: int = 1
    profile: Profile = DEFAULT_PROFILE
    trusted_stores: tuple[str, ...] = ()
    trust_any_store: bool | None = None
    max_batch_records: int = 8192
    max_batch_bytes: int = 1024 * 1024
    linger_ms: float = DEFAULT_LINGER_MS
    """How long a record may wait on the IO thread for others to share its batch (one
    signature and one message for all of them): the producer publishes at most one batch
    per ``linger_ms`` (and any full ones), and a record that comes after a quiet
    ``linger_ms`` goes at once (``dafka/producer/_linger.py``). 0: publish whatever
    is queued when the IO thread wakes (natural batching only)."""
    batch_format: int = DEFAULT_BATCH_FORMAT
    """The signed batch format written (``docs/wire.md`` §9.3): 3 (BLAKE3 digests), or 1
    (BLAKE2b) while some stores or consumers of the topic still run a version that
    reads format 1 only. Every reader of this version takes both."""
    compression: str | None = None
    """``none``, ``zstd`` or ``lz4``: what the producer compresses its batches with
    (format 5, ``docs/records.md``); None: each topic's ``compression`` setting from the
    cluster metadata (none when the producer does not follow it)."""

    def validate(self) -> ProducerConfig:
        check_profile(self.profile)
        if self.compression is not None:
            try:
                codec = codec_named(self.compression)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
            if codec and self.profile == "rfc46":
                raise ProfileError(
                    f"compression {self.compression!r} needs the signed profile "
                    "(rfc46 records are sent as they are)"
                )
        if self.batch_format not in BATCH_FORMATS:
            raise ConfigError(
                f"batch_format must be one of {', '.join(map(str, BATCH_FORMATS))}, "
                f"not {self.batch_format!r}"
            )
        if not 0 <= self.linger_ms <= MAX_LINGER_MS:
            raise ConfigError(f"linger_ms must be between 0 and {MAX_LINGER_MS:,}")
        if self.max_unacked_bytes <= 0:
            raise ConfigError("max_unacked_bytes must be positive")
        if self.on_full not in ("block", "raise"):
            raise ConfigError("on_full must be 'block' or 'raise'")
        if self.min_acks < 1:
            raise ConfigError("min_acks must be at least 1")
        if self.min_acks != 1 and self.profile == "rfc46":
            raise ConfigError(
                "min_acks > 1 needs the signed profile: rfc46 ACKs do not say which store sent them"
            )
        if self.profile == "rfc46" and (self.trusted_stores or self.trust_any_store is False):
            raise ConfigError("trusted stores need the signed profile: rfc46 ACKs are not signed")
        if self.profile == "signed":
            if self.trusted_stores and self.trust_any_store:
                raise ConfigError("give trusted stores or trust_any_store, not both")
            if not self.trusted_stores and self.trust_any_store is False:
                raise ConfigError(
                    "no trusted stores: give their node IDs or public keys (dafka-keys show), "
                    "or trust any store"
                )
            if self.trusted_stores and self.min_acks > len(self.trusted_stores):
                raise ConfigError(
                    f"min_acks={self.min_acks} but only {len(self.trusted_stores)} trusted stores"
                )
        if not 1 <= self.max_batch_records <= 65_536:
            raise ConfigError("max_batch_records must be 1..65536")
        if not 1024 <= self.max_batch_bytes <= 16 * 1024 * 1024:
            raise ConfigError("max_batch_bytes must be 1024..16777216")
        return self

    @property
    def trusts_any_store(self) -> bool:
        return self.profile == "signed" and not self.trusted_stores


OffsetReset = Literal["earliest", "latest"]


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    offset_reset: OffsetReset | int = "latest"
    start_offsets: Mapping[tuple[str, str], int] = field(default_factory=dict)
    fetch_window: int = 10_000
    """Offsets one FETCH asks for (rfc46). Under ``signed`` a FETCH asks for at least
    100,000 (``dafka.core.answers.FETCH_COUNT``): a store's answer is bounded anyway (8
    batches, 8 MiB), and a smaller count cut it short, a round trip per two batches."""
    fetch_timeout: float = 1.0
    max_backlog: int = 100_000
    profile: Profile = DEFAULT_PROFILE
    max_buffered_bytes: int = 64 * 1024 * 1024
    """What the reorder buffer holds out of order over all partitions, in bytes (a
    batch's wire size plus 64 a record); a batch over it is fetched again in its turn."""
    max_buffered_bytes_per_partition: int = 16 * 1024 * 1024
    """The same, per partition (at most ``max_buffered_bytes``)."""
    max_decompressed_bytes: int = MAX_RAW_BYTES
    """What the consumer decompresses of one format-5 batch at most (its records, as
    signed), checked before decompressing: a batch over it is refused and counted
    (``docs/records.md``). 1024 up to 64 MiB (``dafka.wire.signed_rich.MAX_RAW_BYTES``)."""

    def validate(self) -> ConsumerConfig:
        check_profile(self.profile)
        size = self.max_decompressed_bytes
        if isinstance(size, bool) or not isinstance(size, int) or not 1024 <= size <= MAX_RAW_BYTES:
            raise ConfigError(
                f"max_decompressed_bytes must be 1024..{MAX_RAW_BYTES} (the most a producer "
                f"may seal), not {size!r}"
            )
        if not 0 <= self.max_buffered_bytes_per_partition <= self.max_buffered_bytes:
            raise ConfigError(
                "max_buffered_bytes_per_partition must be 0..max_buffered_bytes, not "
                f"{self.max_buffered_bytes_per_partition!r} (max_buffered_bytes "
                f"{self.max_buffered_bytes!r})"
            )
        reset = self.offset_reset
        if isinstance(reset, bool) or not (
            reset in ("earliest", "latest") or isinstance(reset, int)
        ):
            raise ConfigError(
                "offset reset must be 'earliest', 'latest', an offset >= 0 or -N (N before the end)"
            )
        return self


@dataclass(frozen=True, slots=True)
class StoreConfig:
    path: Path = Path("storedb")
    map_size: int = 64 * 1024 * 1024
    profile: Profile = DEFAULT_PROFILE


def load_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a TOML config file; one clear ConfigError for any problem."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
