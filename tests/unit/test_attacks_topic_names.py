"""Topic names with control characters, newlines or line separators are refused where a
name enters (issue 34, point 6): the API, the admin client, and a topic.create in the
metadata from any peer, signed by an admin or not. Names already stored are still read
(:func:`dafka.ids.check_topic`)."""

from __future__ import annotations

import pytest

from dafka.consumer._facade import Consumer
from dafka.errors import InvalidTopic
from dafka.groups.records import group_topic
from dafka.ids import check_topic, check_topic_name
from dafka.metadata.state import command
from tests.admin import admin_sm, signed

BAD = ["a\nb", "a\rb", "tab\there", "\x1b[31mred", "del\x7f", "c1\x85", "ls\u2028x", "nul\x00"]


@pytest.mark.parametrize("name", BAD)
def test_a_name_with_a_control_character_is_refused(name: str) -> None:
    with pytest.raises(InvalidTopic):
        check_topic_name(name)


@pytest.mark.parametrize("name", ["t3", "orders.eu-1_x", "café", "日本", "^t3", "a b"])
def test_printable_names_pass(name: str) -> None:
    assert check_topic_name(name) == name


def test_a_stored_name_is_still_read() -> None:
    assert check_topic("a\nb") == "a\nb"  # a store or snapshot that holds one still loads


def test_a_peers_unsigned_topic_create_with_a_newline_is_refused() -> None:
    sm = admin_sm()
    data = command("topic.create", topic="a\nb")
    assert sm.admission(data) is not None  # the leader does not append it
    sm.apply_data(data)  # nor does a follower apply it if a leader did
    assert "a\nb" not in sm.topics


def test_an_admins_signed_topic_create_with_a_control_character_is_refused() -> None:
    sm = admin_sm()
    data = signed(sm, "topic.create", topic="x\x1b[2J", settings={"min_acks": 1})
    assert sm.admission(data) is not None
    sm.apply_data(data)
    assert sm.topics == {}
    ok = signed(sm, "topic.create", topic="x", settings={"min_acks": 1})
    assert sm.apply_data(ok) is None and "x" in sm.topics


def test_the_api_refuses_them_before_starting_anything() -> None:
    with pytest.raises(InvalidTopic):
        Consumer(["ok", "a\nb"], metadata=False)
    with pytest.raises(InvalidTopic):
        group_topic("g\n1")
