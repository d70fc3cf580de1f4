"""quick_init (dafka.frozen): the faster __init__ of the frozen dataclasses made once per
record keeps what the dataclass's own did: fields by position and name, defaults, equality,
frozenness, errors for missing arguments, and refuses classes it would get wrong."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from dafka.core import messages as m
from dafka.frozen import quick_init
from dafka.storage.base import StoredBatch


@dataclass(frozen=True, slots=True)
class Plain:
    topic: str
    offset: int
    content: bytes = field(repr=False, default=b"")
    count: int = 1


@quick_init
@dataclass(frozen=True, slots=True)
class Quick:
    topic: str
    offset: int
    content: bytes = field(repr=False, default=b"")
    count: int = 1


def test_quick_init_builds_what_the_dataclass_init_builds() -> None:
    for args, kwargs in (
        (("t", 5), {}),
        (("t", 5, b"v"), {}),
        (("t", 5, b"v", 3), {}),
        ((), {"topic": "t", "offset": 5, "count": 2}),
    ):
        quick, plain = Quick(*args, **kwargs), Plain(*args, **kwargs)  # type: ignore[arg-type]
        assert dataclasses.astuple(quick) == dataclasses.astuple(plain)
        assert repr(quick).replace("Quick", "Plain") == repr(plain)
    assert Quick("t", 5) == Quick("t", 5, b"", 1) != Quick("t", 6)
    assert hash(Quick("t", 5)) == hash(Quick("t", 5, b"", 1))


def test_quick_init_keeps_the_class_frozen_and_its_argument_errors() -> None:
    q = Quick("t", 5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.topic = "u"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Quick("t")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Quick("t", 5, nope=1)  # type: ignore[call-arg]
    assert dataclasses.replace(q, offset=9) == Quick("t", 9)


def test_quick_init_refuses_classes_it_would_get_wrong() -> None:
    @dataclass(slots=True)
    class Mutable:
        x: int

    @dataclass(frozen=True, slots=True)
    class Factory:
        x: list[int] = field(default_factory=list)

    @dataclass(frozen=True, slots=True)
    class Post:
        x: int

        def __post_init__(self) -> None:
            pass

    for cls in (Mutable, Factory, Post):
        with pytest.raises(TypeError):
            quick_init(cls)


def test_the_per_record_classes_use_it() -> None:
    for cls in (m.Record, m.DirectRecord, StoredBatch):
        assert "_set_0" in cls.__init__.__globals__, cls
    assert m.Record("t", "p", 3, b"v") == m.Record("t", "p", 3, b"v", 1)
    assert StoredBatch("t", "p", 0, 0, b"v").profile == "rfc46"
