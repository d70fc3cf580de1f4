import pytest

from dafka.config import (
    NodeConfig,
    ProducerConfig,
    TowerAddress,
    parse_endpoint,
    parse_towers,
)
from dafka.errors import ConfigError


def test_tower_list_parses_hosts_and_ports() -> None:
    towers = parse_towers("127.0.0.1:5556, tcp://127.0.0.1:6000")
    assert towers == (TowerAddress("127.0.0.1", 5556), TowerAddress("127.0.0.1", 6000))
    assert towers[1].sub == "tcp://127.0.0.1:6000"
    assert towers[1].pub == "tcp://127.0.0.1:6001"


def test_default_tower_is_the_reference_default() -> None:
    (tower,) = parse_towers(None)
    assert (tower.sub, tower.pub) == ("tcp://127.0.0.1:5556", "tcp://127.0.0.1:5557")


@pytest.mark.parametrize("bad", ["localhost", "127.0.0.1:", "127.0.0.1:99999", "udp://x:1", ":5"])
def test_bad_endpoints_are_one_clear_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="HOST:PORT|port"):
        parse_endpoint(bad)


def test_port_zero_only_where_we_bind() -> None:
    with pytest.raises(ConfigError):
        parse_endpoint("127.0.0.1:0")
    assert parse_endpoint("127.0.0.1:0", allow_zero=True) == ("127.0.0.1", 0)


def test_wildcard_host_cannot_be_advertised() -> None:
    with pytest.raises(ConfigError, match="wildcard"):
        NodeConfig(host="0.0.0.0").validate()


def test_min_acks_above_one_needs_signed_profile() -> None:
    with pytest.raises(ConfigError, match="signed"):
        ProducerConfig(min_acks=2, profile="rfc46").validate()
