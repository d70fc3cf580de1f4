"""Issue 33's fault scenarios: which nemesis kinds run together, on what cluster, and
whether ``make test``'s bounded run includes them.

A scenario whose ``needs`` names an open issue-33 point fails on code without that fix
(its failing counts are the evidence in the issue); once the fix is merged, set its
``bounded`` to True and ``tests/faults/test_faults.py`` runs it (seed and seconds below)
in ``make test``. ``make faults`` runs every scenario (``--scenario all``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from tests.faults import powerfs
from tests.faults.cluster import Options
from tests.faults.nemesis import CLOCK_FAULTS, NEEDS_POWER, POWER_FAULTS, Kind


@dataclass(frozen=True)
class Scenario:
    name: str
    kinds: tuple[Kind, ...]
    needs: str  # the issue-33 points whose fixes it needs ("" if none)
    bounded: bool = False  # in make test's bounded run
    seed: int = 1  # for the bounded run
    seconds: float = 20.0
    min_acks: int = 2
    power: bool = False
    clocks: bool = False
    retention_ms: int | None = None
    dir_sync: str = "file"  # powerfs: "strict" also loses names whose directory was not synced
    stores: int = 3
    retiring: int = 0  # producers stopped for good at the first disk fault

    def options(self, min_acks: int | None = None, **more: object) -> Options:
        opts = Options(
            min_acks=self.min_acks if min_acks is None else min_acks,
            power=self.power or any(k in NEEDS_POWER for k in self.kinds),
            clocks=self.clocks,
            retention_ms=self.retention_ms,
            dir_sync=self.dir_sync,
            stores=self.stores,
            retiring=self.retiring,
        )
        return replace(opts, **more)  # type: ignore[arg-type]


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("power-loss", POWER_FAULTS, needs="", bounded=True, seed=157, seconds=14.0),
    Scenario(
        "power-loss-strict",
        POWER_FAULTS,
        needs="11 (directories fsynced after their files are created)",
        dir_sync="strict",
    ),
    Scenario("rot-stores", (Kind.ROT_STORE,), needs="3 (scrub, verify before serving, repair)"),
    Scenario("rot-journals", (Kind.ROT_JOURNAL,), needs="4 (journal rot told from a torn tail)"),
    Scenario("rot-raft", (Kind.ROT_RAFT,), needs="5 (protocol-aware Raft recovery)"),
    Scenario(
        "replace-disk",
        (Kind.REPLACE_DISK,),
        needs="1 (re-replication after a lost disk)",
        stores=2,
        retiring=1,
    ),
    Scenario("eio-fsync", (Kind.EIO_FSYNC,), needs="9 (a store whose environment fails)"),
    Scenario(
        "clocks",
        (*CLOCK_FAULTS, Kind.KILL_PRODUCER),  # a producer's recovery after its clock stepped back
        needs="6, 8 (retention bounded against clocks; runs ordered without clocks)",
        clocks=True,
        retention_ms=10 * 60 * 1000,
    ),
)


TOWER_PAUSE = Scenario(
    "tower-pause",
    (Kind.PAUSE_TOWERS, Kind.KILL_PRODUCER),
    needs="",
    bounded=True,
    seed=1,  # the towers paused for 8.3 s, a producer killed, the towers paused for 6.4 s
    seconds=26.0,
)
"""Issue 39, point 6: every tower paused past the beacon expiry under load, twice, and a
producer killed and restarted between the pauses; the data plane's counts must stay zero."""

AT_REST = (Kind.ROT_STORE, Kind.ROT_JOURNAL, Kind.ROT_RAFT, Kind.REPLACE_DISK, Kind.EIO_FSYNC)

BOUNDED_MIX = Scenario(
    "at-rest",
    AT_REST,
    needs="",
    bounded=True,
    seed=2739,  # a replaced disk (new key), rot in stores, a journal and a Raft log, EIO
    seconds=24.0,
    retiring=1,
)
"""``make test``'s short run of the at-rest faults together, all five kinds in 24 s."""

SCENARIOS = (*SCENARIOS, BOUNDED_MIX, TOWER_PAUSE)


def by_name(names: str) -> list[Scenario]:
    """``all`` or comma-separated scenario names."""
    if names == "all":
        return list(SCENARIOS)
    known = {s.name: s for s in SCENARIOS}
    out = []
    for name in names.split(","):
        if name.strip() not in known:
            raise ValueError(f"unknown scenario {name!r} (known: {', '.join(known)})")
        out.append(known[name.strip()])
    return out


def scenario_unavailable(scenario: Scenario) -> str | None:
    """Why ``scenario`` cannot run here (None: it can)."""
    opts = scenario.options()
    if opts.power:
        reason = powerfs.unavailable() or (None if os.geteuid() == 0 else "not root")
        if reason is not None:
            return f"the power-loss layer cannot run: {reason}"
    return None
