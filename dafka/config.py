"""Typed configuration in one place: frozen dataclasses, parsing and validation.

Tower addresses: a tower binds two ports, an XSUB that nodes publish beacons
to and an XPUB that relays them (the C reference defaults are 5556 and 5557).
We name a tower by its XSUB endpoint, ``HOST:PORT`` or ``tcp://HOST:PORT``;
its XPUB is at ``PORT + 1``. Several towers are a comma-separated list.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .errors import ConfigError

DEFAULT_TOWER_PORT = 5556
DEFAULT_HOST = "127.0.0.1"
_ENDPOINT = re.compile(r"^(?:tcp://)?(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.\-]+):(?P<port>\d+)$")


@dataclass(frozen=True, slots=True)
class TowerAddress:
    """Where one tower listens: ``sub`` receives node beacons, ``pub`` relays them."""

    host: str
    port: int

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
                host, port = parse_endpoint(part, "tower address")
                towers.append(TowerAddress(host, port))
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
    return host


@dataclass(frozen=True, slots=True)
class NodeConfig:
    """What every node shares: towers, the host it binds and advertises, timing."""

    towers: tuple[TowerAddress, ...] = (TowerAddress(DEFAULT_HOST, DEFAULT_TOWER_PORT),)
    host: str = DEFAULT_HOST
    port: int = 0  # 0: an ephemeral port on ``host``
    beacon_interval: float = 1.0
    beacon_timeout: float = 4.0
    high_watermark: int = 1_000_000
    max_message_size: int = 16 * 1024 * 1024

    def validate(self) -> NodeConfig:
        check_host(self.host)
        if not self.towers:
            raise ConfigError("at least one tower is needed")
        if self.beacon_interval <= 0 or self.beacon_timeout <= self.beacon_interval:
            raise ConfigError("beacon timeout must be longer than the beacon interval")
        if not 0 <= self.port < 65536:
            raise ConfigError(f"bad port {self.port}")
        return self


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    state_dir: Path | None = None
    head_interval: float = 1.0
    max_unacked_bytes: int = 256 * 1024 * 1024
    on_full: Literal["block", "raise"] = "block"
    min_acks: int = 1
    profile: Literal["rfc46"] = "rfc46"

    def validate(self) -> ProducerConfig:
        if self.max_unacked_bytes <= 0:
            raise ConfigError("max_unacked_bytes must be positive")
        if self.on_full not in ("block", "raise"):
            raise ConfigError("on_full must be 'block' or 'raise'")
        if self.min_acks != 1 and self.profile == "rfc46":
            raise ConfigError(
                "min_acks > 1 needs the signed profile: rfc46 ACKs do not say which store sent them"
            )
        return self


OffsetReset = Literal["earliest", "latest"]


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    offset_reset: OffsetReset | int = "latest"
    start_offsets: Mapping[tuple[str, str], int] = field(default_factory=dict)
    fetch_window: int = 10_000
    fetch_timeout: float = 1.0
    max_backlog: int = 100_000

    def validate(self) -> ConsumerConfig:
        reset = self.offset_reset
        if isinstance(reset, bool) or not (
            reset in ("earliest", "latest") or (isinstance(reset, int) and reset >= 0)
        ):
            raise ConfigError("offset reset must be 'earliest', 'latest' or an offset >= 0")
        return self


@dataclass(frozen=True, slots=True)
class StoreConfig:
    path: Path = Path("storedb")
    map_size: int = 64 * 1024 * 1024


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
