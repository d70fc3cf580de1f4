"""Our Raft peers beside the ØMQ RAFT reference server (npm ``zmq-raft``), for real.

Needs the reference installed (``make reference``, which ``make test`` runs: into
``.reference/zmq-raft``, or where ``DAFKA_ZMQ_RAFT_DIR`` says) and ``node``; skipped
with the reason otherwise. The permanent mixed-cluster ring
(kills, both kinds leading) lives elsewhere; these are focused checks:

* 2 of ours + 1 reference, one of ours leading (the reference gets long election
  timeouts), pipelined updates: the reference peer does not die, says nothing about
  truncating, and its log is ours entry by entry; our peers said they fall back from
  the extensions with it;
* a reference peer leading: our client's linearizable read fails at once with
  :class:`ExtensionUnsupported`, not as "no leader".
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from dafka.errors import DafkaTimeout
from dafka.raft.client import RaftClient
from dafka.raft.extensions import FEATURES
from dafka.raft.frames import encode_entry
from dafka.raft.statemachine import get_query, put_command
from dafka.raft.storage import FileStorage
from tests.interop.reference import reference_dir
from tests.procs import Proc, free_port, py, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

REF_DIR = reference_dir()
REF: Path | None = REF_DIR / "node_modules" / "zmq-raft"


def _skip_reason() -> str | None:
    assert REF is not None
    if not (REF / "bin" / "zmq-raft.js").is_file():
        return f"no zmq-raft install under {REF_DIR}: run `make reference`"
    if shutil.which("node") is None:
        return "node not found"
    return None


pytestmark.append(pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason())))

DUMP = """
const {FileLog} = require(process.argv[1] + '/lib/server');
const log = new FileLog(process.argv[2] + '/log', process.argv[2] + '/snap', true);
log.ready()
  .then(() => log.getEntries(log.firstIndex, log.lastIndex))
  .then(es => { console.log(JSON.stringify({first: log.firstIndex,
                 entries: es.map(e => e.toString('hex'))})); return log.close(); })
  .catch(err => { console.error(String(err)); process.exit(1); });
"""


def start_ref(root: Path, pid: str, urls: dict[str, str], cluster: str, **opts: object) -> Proc:
    taken: set[int] = set()
    raft: dict[str, object] = {
        "id": pid,
        "secret": cluster,
        "peers": [{"id": p, "url": u} for p, u in urls.items()],
        "data": {"path": str(root / pid)},
        "router": {"bind": urls[pid]},
        "broadcast": {"url": f"tcp://127.0.0.1:{free_port(taken)}"},
        "webmonitor": {"enable": False},
        **opts,
    }
    (root / pid).mkdir(parents=True, exist_ok=True)
    config = root / f"{pid}.json"
    config.write_text(json.dumps({"raft": raft}))
    assert REF is not None
    proc = Proc(["node", str(REF / "bin" / "zmq-raft.js"), "-c", str(config)])
    proc.wait_line_stdout(r"server listening at")
    return proc


def start_ours(root: Path, pid: str, urls: dict[str, str], cluster: str) -> Proc:
    others = [f"--peer={p}={u}" for p, u in urls.items() if p != pid]
    args = ["--id", pid, "--bind", urls[pid], *others, "--data-dir", str(root / pid)]
    proc = Proc(py("dafka.cli.raft", "peer", *args, "--cluster", cluster, "--snapshot-every", "0"))
    proc.wait_line(rf"raft peer {pid} on ")
    return proc


def ref_log(path: Path) -> list[str]:
    assert REF is not None
    done = subprocess.run(
        ["node", "-e", DUMP, str(REF), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    dumped = json.loads(done.stdout)
    assert dumped["first"] == 1
    return list(dumped["entries"])


def our_log(path: Path) -> list[str]:
    storage = FileStorage(path / "raft")
    try:
        return [encode_entry(e).hex() for e in storage.load().entries]
    finally:
        storage.close()


def test_two_of_ours_lead_a_reference_peer(tmp_path: Path) -> None:
    taken: set[int] = set()
    ids = ["ours1", "ours2", "ref3"]
    urls = {pid: f"tcp://127.0.0.1:{free_port(taken)}" for pid in ids}
    procs = {pid: start_ours(tmp_path, pid, urls, "mixed") for pid in ids[:2]}
    procs["ref3"] = start_ref(
        tmp_path, "ref3", urls, "mixed", electionTimeoutMin=3000, electionTimeoutMax=4000
    )
    client = RaftClient(dict(urls), "mixed", timeout=20.0)
    try:
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
            ref = procs["ref3"]
            if ref.p.poll() is not None:
                raise AssertionError(f"the reference peer died: {ref.stderr[-2000:]}")
            try:
                return client.log_info(urls["ref3"], timeout=1.0).commit_index >= last
            except DafkaTimeout:
                return False

        wait_until(ref_committed, 30.0, what="the reference peer to commit everything")
        assert procs["ref3"].p.poll() is None, procs["ref3"].stderr
        for pid in ids[:2]:
            procs[pid].wait_line(r"raft\.ext\.fallback .*peer=ref3", timeout=10.0)
            assert "raft.ext.fallback" not in "\n".join(
                line for line in procs[pid].stderr_lines if "peer=ours" in line
            )
    finally:
        client.close()
        for proc in procs.values():
            proc.terminate()
    said = procs["ref3"].stderr + bytes(procs["ref3"].stdout).decode(errors="replace")
    assert "refusing" not in said and "RAFT ERROR" not in said, said
    theirs = ref_log(tmp_path / "ref3")
    for pid in ids[:2]:
        mine = our_log(tmp_path / pid)
        assert len(theirs) >= last and len(mine) >= last
        common = min(len(theirs), len(mine))
        diff = [k + 1 for k in range(common) if theirs[k] != mine[k]]
        assert not diff, f"{pid}: {len(diff)} entries differ, first at {diff[:5]}"


def test_a_read_from_a_reference_leader_says_unsupported(tmp_path: Path) -> None:
    from dafka.errors import ExtensionUnsupported  # here: the ring test runs on older code too

    taken: set[int] = set()
    urls = {"ref1": f"tcp://127.0.0.1:{free_port(taken)}"}
    proc = start_ref(tmp_path, "ref1", urls, "alone")
    client = RaftClient(dict(urls), "alone", timeout=3.0)
    try:
        client.request_config(timeout=10.0)
        with pytest.raises(ExtensionUnsupported, match="does not speak Dafka's linearizable"):
            client.read(get_query("k"), timeout=1.0)
    finally:
        client.close()
        proc.terminate()
