"""dafka.metadata.settings alone: the defaults and validation of topic and cluster settings."""

from __future__ import annotations

import pytest

from dafka.errors import ConfigError
from dafka.metadata import settings as s
from dafka.metadata import state


def test_the_state_machine_module_exports_the_same_rules():
    assert state.check_settings is s.check_settings
    assert state.topic_settings is s.topic_settings
    assert state.TOPIC_DEFAULTS is s.TOPIC_DEFAULTS


def test_node_ids_are_normalised_and_checked():
    assert s.node_id(" ab" + "0" * 30, "store") == "AB" + "0" * 30
    with pytest.raises(ConfigError, match="bad store"):
        s.node_id("xyz", "store")
    with pytest.raises(ConfigError):
        s.node_id(12, "store")


def test_admin_lists_hold_1_to_max_admins_keys():
    key = "ab" * 32
    assert s.admin_list([key, key]) == [key]
    with pytest.raises(ConfigError):
        s.admin_list([])
    with pytest.raises(ConfigError):
        s.admin_list("not a list")


def test_topic_and_cluster_settings():
    assert s.topic_settings({"min_acks": 2})["min_acks"] == 2
    assert s.topic_settings(None) == s.TOPIC_DEFAULTS
    assert s.check_settings({"retention_ms": None, "min_acks": 3}) == {
        "retention_ms": None,
        "min_acks": 3,
    }
    with pytest.raises(ConfigError, match="signed profile"):
        s.check_settings({"profile": "rfc46", "min_acks": 2})
    with pytest.raises(ConfigError, match="unknown topic setting"):
        s.check_settings({"nope": 1})
    assert s.check_cluster_settings({"curve_clients": "metadata"}) == {"curve_clients": "metadata"}
    with pytest.raises(ConfigError, match="unknown cluster setting"):
        s.check_cluster_settings({"nope": 1})
