"""Every mutant of ``tests.attack_mutants`` still applies to the code it names.

The mutant runner fails on a mutant whose text the code no longer contains, but it runs
only on demand; this check runs in every ``make test``, so moving or rewording a defence
without updating its mutant fails at once, not at the next mutant run.
"""

from __future__ import annotations

import pytest

from tests import attack_mutants, mutant_guards
from tests.mutant_guards import Guard


@pytest.mark.parametrize("name", sorted(attack_mutants.MUTANTS))
def test_the_mutant_applies_and_names_the_tests_that_catch_it(name: str) -> None:
    assert attack_mutants.missing(name) == []
    assert attack_mutants.EXPECTED.get(name), f"mutant {name!r} names no test to catch it"
    for test in attack_mutants.EXPECTED[name]:
        assert test.split("::")[0] in attack_mutants.TESTS, f"{test} is not in TESTS"


def test_a_mutant_whose_text_is_gone_is_reported() -> None:
    broken = ("tests.mutant_guards", "dedent", "text that is in no function\\x00", "x")
    attack_mutants.MUTANTS["__broken__"] = broken
    try:
        assert attack_mutants.missing("__broken__") != []
    finally:
        del attack_mutants.MUTANTS["__broken__"]


def test_a_mutant_whose_marker_is_gone_is_reported_by_its_slug() -> None:
    attack_mutants.MUTANTS["__broken__"] = Guard("no-such-guard-anywhere", "pass")
    try:
        (problem,) = attack_mutants.missing("__broken__")
        assert "no-such-guard-anywhere" in problem
    finally:
        del attack_mutants.MUTANTS["__broken__"]


def test_every_marker_marks_one_statement_and_a_mutant_names_it() -> None:
    named = {
        part.slug
        for name in attack_mutants.MUTANTS
        for part in attack_mutants._parts(name)
        if isinstance(part, Guard)
    }
    for slug, sites in mutant_guards.all_sites().items():
        where = ", ".join(site.where() for site in sites)
        assert len(sites) == 1, f"marker {slug!r} is on {len(sites)} statements: {where}"
        assert sites[0].qualname is not None, f"marker {slug!r} at {where}: {sites[0].problem}"
        assert slug in named, f"marker {slug!r} at {where} is named by no mutant"


def test_a_mutant_whose_marker_is_gone_is_not_applied(capsys: pytest.CaptureFixture[str]) -> None:
    attack_mutants.MUTANTS["__broken__"] = [Guard("no-such-guard-anywhere", "pass")]
    try:
        with pytest.raises(SystemExit) as exit_:
            attack_mutants.apply("__broken__")
        assert exit_.value.code == attack_mutants.NOT_APPLIED
        assert "no-such-guard-anywhere" in capsys.readouterr().err
    finally:
        del attack_mutants.MUTANTS["__broken__"]
