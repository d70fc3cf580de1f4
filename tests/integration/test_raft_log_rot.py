"""Rot in a tower's Raft log (issue 33 point 5), with real tower processes.

A lone tower whose last log record (topic ``t4``, acknowledged) has one flipped bit took
it for a torn tail, truncated it and served a metadata without ``t4``. It must refuse to
start with one line saying how to recover, write nothing, and start only when told to
drop the record (``--accept-log-loss``, logged).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dafka.metadata.state import command, decode_config
from dafka.raft.client import RaftClient
from dafka.raft.peer import FileStorage, put_command
from tests.admin import tower_args
from tests.integration.test_raft_cluster import RaftCluster
from tests.procs import Proc, py, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def _tower(data: Path, *extra: str) -> Proc:
    return Proc(
        py("tower", "--bind", "127.0.0.1:0", "--data-dir", str(data), *tower_args(), *extra)
    )


def _started(proc: Proc) -> tuple[str, str]:
    m = proc.wait_line(r"metadata peer \S+ on (tcp://\S+) \(cluster (\S+)\)", timeout=30)
    return m.group(1), m.group(2)


def _topics(url: str, cluster: str) -> set[str]:
    with RaftClient([url], cluster, timeout=10) as client:
        return set(decode_config(client.read([b"config"]))["topics"])


def test_a_lone_tower_with_a_rotten_last_record_refuses_to_start(tmp_path: Path) -> None:
    data = tmp_path / "tower"
    proc = _tower(data)
    try:
        url, cluster = _started(proc)
        with RaftClient([url], cluster, timeout=10) as client:
            for name in ("t1", "t2", "t3", "t4"):
                client.update(command("topic.create", topic=name), timeout=10)
        assert {"t1", "t2", "t3", "t4"} <= _topics(url, cluster)
        assert proc.terminate(timeout=15) == 0
    finally:
        proc.kill()
    log = data / "raft" / "log"
    with FileStorage(data / "raft") as storage:
        last = storage.load().entries[-1]
    assert b"t4" in last.data  # the acknowledged creation of t4 is the last record
    blob = bytearray(log.read_bytes())
    at = blob.rindex(b"t4")
    blob[at] ^= 0x01  # one flipped bit in a record fsynced long ago ("t4" -> "u4")
    log.write_bytes(bytes(blob))
    size = log.stat().st_size

    proc = _tower(data)
    try:  # before: it started, without t4
        wait_until(lambda: proc.p.poll() is not None or "metadata peer" in proc.stderr, 60)
        assert "metadata peer" not in proc.stderr, "started on a log that lost t4"
        rc = proc.wait(10)
    finally:
        proc.kill()
    assert rc == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr_lines if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert "only voter" in errors[0] and "--accept-log-loss" in errors[0], errors[0]
    assert "raft.storage.truncate" not in proc.stderr
    assert log.stat().st_size == size  # nothing was cut

    proc = _tower(data, "--accept-log-loss")  # the operator's explicit choice
    try:
        url, cluster = _started(proc)
        assert "warning: --accept-log-loss" in proc.stderr
        proc.wait_line(r"raft\.storage\.accept_log_loss .*lost=\d+\.\.\d+", timeout=10)
        topics = _topics(url, cluster)
        assert {"t1", "t2", "t3"} <= topics and "t4" not in topics
    finally:
        proc.kill()


def _rot_last_record(data_dir: Path) -> int:
    """Flip one bit in the data of the last record of a peer's log; its index."""
    with FileStorage(data_dir / "raft") as storage:
        last = storage.load().entries[-1]
    log = data_dir / "raft" / "log"
    blob = bytearray(log.read_bytes())
    at = blob.rindex(last.data) + len(last.data) - 1
    blob[at] ^= 0x02 if blob[at] ^ 0x02 else 0x01  # one bit; no torn write leaves it
    log.write_bytes(bytes(blob))
    return last.index


def test_a_peer_whose_log_rots_does_not_vote_until_a_leader_refilled_it(tmp_path: Path) -> None:
    """t4 is committed on the leader and f only (g is down). Both go down, f's last
    record rots. f and g come back: before, f took the rot for a torn tail, voted for g
    (whose log looked like f's shortened one), g led without t4 and the old leader's t4
    was overwritten when it came back. Now f does not vote: nobody leads until the old
    leader is back; it leads, refills f, and t4 stays."""
    cluster = RaftCluster(tmp_path)
    try:
        with cluster.client(timeout=10) as probe:
            lead = cluster.wait_leader(probe, timeout=30)
            f, g = [pid for pid in cluster.ids if pid != lead]
            with cluster.client(timeout=10) as client:
                client.update(put_command("t3", "created"))
                cluster.wait_converged(probe, cluster.ids, timeout=30)
                cluster.kill(g)
                x = client.update(put_command("t4", "created"))  # acknowledged by lead, f
            cluster.kill(lead)
            cluster.kill(f)
            assert _rot_last_record(tmp_path / f) == x
            cluster.start(f)
            cluster.start(g)
            cluster.procs[f].wait_line(rf"raft\.peer\.recovering id={f} recovering_to={x} ")
            deadline = time.monotonic() + 3.0  # many election timeouts of g's
            while time.monotonic() < deadline:
                assert cluster.leader(probe, [f, g]) is None, "elected on a log without t4"
                time.sleep(0.1)
            cluster.start(lead)
            state = cluster.wait_converged(probe, cluster.ids, timeout=40)
            assert state["t4"] == "created" and state["t3"] == "created"
            cluster.procs[f].wait_line(r"raft\.storage\.recovered ", timeout=10)
    finally:
        cluster.stop_all()


def test_a_lone_raft_peer_refuses_its_rotten_log_unless_told_to_drop_it(tmp_path: Path) -> None:
    """``dafka raft peer`` (the generic Raft peer) takes ``--accept-log-loss`` as the
    tower does: alone, with its last record rotten, it exits 1 with one line; with the
    flag it starts without that record."""
    cluster = RaftCluster(tmp_path, 1)
    (pid,) = cluster.ids
    try:
        with cluster.client(timeout=10) as client:
            client.update(put_command("t3", "created"))
            x = client.update(put_command("t4", "created"))
    finally:
        cluster.stop_all()
    assert _rot_last_record(tmp_path / pid) == x
    with pytest.raises(AssertionError):
        cluster.start(pid)  # exits before it says it runs
    proc = cluster.procs[pid]
    assert proc.wait(10) == 1, proc.stderr
    errors = [line for line in proc.stderr_lines if line.startswith("error:")]
    assert len(errors) == 1 and "--accept-log-loss" in errors[0], proc.stderr
    proc = cluster.start(pid, "--accept-log-loss")
    try:
        assert "warning: --accept-log-loss" in proc.stderr
        proc.wait_line(r"raft\.storage\.accept_log_loss ", timeout=10)
        with cluster.client(timeout=10) as client:
            client.update(put_command("t5", "created"))  # it leads again, t4 knowingly gone
    finally:
        cluster.stop_all()
