"""Our Raft peers beside the ØMQ RAFT reference server (npm ``zmq-raft``), for real.

Needs the reference installed (``make reference``, which ``make test`` runs: into
``.reference/zmq-raft``, or where ``DAFKA_ZMQ_RAFT_DIR`` says) and ``node``; skipped
with the reason otherwise (this file never installs it). The peers are started, stopped
and their logs read by the interop harness, :class:`tests.interop.reference.MixedCluster`.
The permanent mixed-cluster ring (kills, both kinds leading) is
``tests/interop/test_raft_mixed.py``; these are focused checks:

* 2 of ours + 1 reference, one of ours leading (the reference gets long election
  timeouts), pipelined updates: the reference peer does not die, says nothing about
  truncating, and its log is ours entry by entry; our peers said they fall back from
  the extensions with it;
* a reference peer leading: our client's linearizable read fails at once with
  :class:`ExtensionUnsupported`, not as "no leader".
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dafka.errors import DafkaTimeout
from dafka.raft.codec._frames import encode_entry
from dafka.raft.core import FEATURES
from dafka.raft.peer import put_command
from dafka.raft.peer._statemachine import get_query
from tests.interop.reference import Kind, MixedCluster, reference_dir
from tests.procs import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

REF_DIR = reference_dir()


def _skip_reason() -> str | None:
    if not (REF_DIR / "node_modules" / "zmq-raft" / "bin" / "zmq-raft.js").is_file():
        return f"no zmq-raft install under {REF_DIR}: run `make reference`"
    if shutil.which("node") is None:
        return "node not found"
    return None


pytestmark.append(pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason())))


def _hex_log(cluster: MixedCluster, pid: str) -> list[str]:
    """The stopped peer's log from its files, entry by entry as wire bytes (hex)."""
    snapshot, entries = cluster.read_log(pid)
    assert snapshot == 0, f"{pid} compacted its log (snapshot at {snapshot})"
    return [encode_entry(e).hex() for e in entries]


def test_two_of_ours_lead_a_reference_peer(tmp_path: Path) -> None:
    cluster = MixedCluster(
        tmp_path,
        [Kind.OURS, Kind.OURS, Kind.REF],
        name="mixed",
        ref_options={"electionTimeoutMin": 3000, "electionTimeoutMax": 4000},
        reference=REF_DIR,
    )
    ids = cluster.ids
    assert ids == ["ours1", "ours2", "ref3"]
    urls = cluster.urls
    cluster.start_all()
    ref = cluster.procs["ref3"]
    client = cluster.client(timeout=20.0)
    try:
        ours = [cluster.procs[pid] for pid in ids[:2]]
        leader = client.request_config(timeout=20.0).leader
        assert leader in ("ours1", "ours2")
        assert client.features(urls["ours1"], timeout=5.0) == frozenset(FEATURES)
        n = 3000
        indexes = client.update_many(
            [put_command(f"k{k % 50}", k) for k in range(n)], window=64, timeout=60.0
        )
        assert len(indexes) == n and indexes == sorted(indexes)
        last = indexes[-1]

        def ref_committed() -> bool:
            if ref.p.poll() is not None:
                raise AssertionError(f"the reference peer died: {ref.stderr[-2000:]}")
            try:
                return client.log_info(urls["ref3"], timeout=1.0).commit_index >= last
            except DafkaTimeout:
                return False

        wait_until(ref_committed, 30.0, what="the reference peer to commit everything")
        assert ref.p.poll() is None, ref.stderr
        for proc in ours:
            proc.wait_line(r"raft\.ext\.fallback .*peer=ref3", timeout=10.0)
            assert "raft.ext.fallback" not in "\n".join(
                line for line in proc.stderr_lines if "peer=ours" in line
            )
    finally:
        client.close()
        cluster.stop_all()
    said = ref.stderr + bytes(ref.stdout).decode(errors="replace")
    assert "refusing" not in said and "RAFT ERROR" not in said, said
    theirs = _hex_log(cluster, "ref3")
    for pid in ids[:2]:
        mine = _hex_log(cluster, pid)
        assert len(theirs) >= last and len(mine) >= last
        common = min(len(theirs), len(mine))
        diff = [k + 1 for k in range(common) if theirs[k] != mine[k]]
        assert not diff, f"{pid}: {len(diff)} entries differ, first at {diff[:5]}"


def test_a_read_from_a_reference_leader_says_unsupported(tmp_path: Path) -> None:
    from dafka.errors import (
        ExtensionUnsupported,  # here: the ring test runs on older code too
    )

    cluster = MixedCluster(tmp_path, [Kind.REF], name="alone", reference=REF_DIR)
    cluster.start_all()
    client = cluster.client(timeout=3.0)
    try:
        client.request_config(timeout=10.0)
        with pytest.raises(ExtensionUnsupported, match="does not speak Dafka's linearizable"):
            client.read(get_query("k"), timeout=1.0)
    finally:
        client.close()
        cluster.stop_all()
