"""Discovery and the topic mesh at 1,000 and 10,000 nodes, simulated (issue 39, item 4).

    python -m benchmarks.discovery_sim [--nodes 1000,10000] [--topics 100,1000]
                                       [--towers 1] [--tower-fanout all|one]
                                       [--loss 10] [--brief-above 2000000] [--whole]
                                       [--full-nodes 1000] [--cold-nodes 1000]
                                       [--seed 0] [--out FILE]

No sockets: :mod:`dafka.sim.discovery_sim` runs the real ``Discovery`` of every node, the
real interest beacons and relay prefixes, on a simulated network and clock. For each N
of ``--nodes`` and T of ``--topics``, one run of the topic mesh (stores 3, producers and
consumers 1-3 topics each), started warm (as a cluster that has run a while), through:

* 0.5-2.5 s: the rates (messages a node receives a second, beacons and heartbeats; what
  the towers take in, publish and send);
* 2.5 s: k = N/200 producers or consumers leave and k join; how long until every peer
  of a leaver disconnected it (``leave_dropped_s``) and until every node sharing a topic
  with a joiner is connected to it and it to them (``join_connected_s``);
* 7 s (the leavers' expiry past): the tower (tower 0) is lost for ``--loss`` s (10); 2 s
  into the loss k more join. ``loss``: peers expired while it was gone (heartbeats keep
  them: 0 expected), and the time from its return until every node holds exactly its
  expected peers (the joiners included: with one tower they are heard only once it is
  back); with ``--tower-fanout one``, also ``relinked_s``: from the loss until each node
  that used it was linked to the next tower of its order (``home_s``, their return home
  30-45 s after they left, is past the run's end: null);
* once reconverged: k nodes pause for 5 s, then read their backlog (``pauses``);
* at the end: connections per node (out: its data SUB's; in: those to its XPUB).

``--towers K`` runs every topic-mesh run on K towers: with ``--tower-fanout all`` (the
default) each node links and beacons to every tower, and hears each beacon K times
(``node_copies``); with ``one`` (K >= 2) each node uses the one tower its
``TowerChoice`` picks, and the towers are peered (``tower/peering.py``): ``per_tower``
gives each tower's messages a second (from and to its nodes, from and to its peers),
``tower_msgs_max_per_s`` the busiest's, ``tower_peer_per_s`` what crossed between them.

A simulated second costs about 2 N P messages for P peers a node (a beacon and a
heartbeat from each), which is 8 million at 10,000 nodes over 100 topics (P about 400)
and about 45 s of one core. So a run estimated above ``--brief-above`` messages a
simulated second (10,000 over 100 by default) is *brief*: the rates' window and the
connections only, 3 simulated seconds (``--whole``: the whole run anyway); the loss and
churn at 10,000 nodes are those of the run over 1,000 topics.

The full mesh (every node hears every beacon and connects to every node: the reference's)
is run at ``--full-nodes`` (brief), and the topic mesh's figures are divided by it at the
same N (``ratios``, ``source: measured``). Above it, the full mesh is not run: its figures
are the model's (each of N beacons a second sent to every node, N² copies; a node holds
min(N - 1, max_peers) peers and receives a heartbeat from each), checked against the run
at ``--full-nodes`` (``model_check``), and labelled ``source: model``.

``--cold-nodes``: one cold start at that N over the first T (every node starts within 1 s):
how long until every node holds its peers (a store must admit every node, 20 a second
past its burst of 200) and what the catch-up costs the tower, per second
(``tower_series``), against the warm run's steady rates.

Prints a table on stderr and the JSON report on stdout, and writes it to
benchmarks/results/discovery-sim-<time>.json (or ``--out``; its path on stderr). Each run
records its wall and CPU seconds and the machine's load average at its start and end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from dafka.sim import Join, Leave, Pause, SimConfig, SimReport, TowerLoss, run
from dafka.sim.config import RECONNECT_MAX, RECONNECT_SPREAD, Fanout

RESULTS = Path(__file__).resolve().parent / "results"
STORES = 3
LEAVE_AT = 2.5
LOSS_AT = 7.0
PAUSE_S = 5.0
BRIEF_S = 3.0
WINDOW = (0.5, 2.5)
BURST, RATE = SimConfig().new_peer_burst, SimConfig().new_peer_rate


def estimated_msgs_per_s(nodes: int, topics: int) -> float:
    """A beacon and a heartbeat a second from each peer, for every node: the stores and
    the other users of a node's topics (about 2, each used by about 2N/T nodes)."""
    peers = min(nodes - 1, STORES + 4 * nodes / topics)
    return 2.0 * nodes * peers


def scenario(
    nodes: int,
    topics: int,
    loss: float,
    brief: bool,
    seed: int,
    towers: int = 1,
    fanout: Fanout = "all",
) -> SimConfig:
    if brief:
        return SimConfig(
            nodes=nodes, topics=topics, stores=STORES, seconds=BRIEF_S, warm=True,
            window=WINDOW, seed=seed, towers=towers, tower_fanout=fanout,
        )  # fmt: skip
    k = max(1, nodes // 200)
    back = LOSS_AT + loss
    pause_at = back + RECONNECT_MAX + RECONNECT_SPREAD + 0.5
    return SimConfig(
        nodes=nodes,
        topics=topics,
        stores=STORES,
        seconds=pause_at + PAUSE_S + 1.0,
        warm=True,
        window=WINDOW,
        seed=seed,
        towers=towers,
        tower_fanout=fanout,
        churn=(
            Leave(LEAVE_AT, k),
            Join(LEAVE_AT, k),
            TowerLoss(LOSS_AT, loss),
            Join(LOSS_AT + 2.0, k),
            Pause(pause_at, PAUSE_S, k),
        ),
    )


def _spread(values: list[float | None]) -> dict[str, Any]:
    seen = [v for v in values if v is not None]
    return {
        "count": len(values),
        "done": len(seen),
        "mean": round(sum(seen) / len(seen), 3) if seen else None,
        "max": round(max(seen), 3) if seen else None,
    }


def measure(cfg: SimConfig, label: str) -> dict[str, Any]:
    print(
        f"{label}: N={cfg.nodes} T={cfg.topics} mesh={cfg.mesh} towers={cfg.towers} "
        f"fanout={cfg.tower_fanout} ...",
        file=sys.stderr,
        flush=True,
    )
    load_start = os.getloadavg()
    t0, c0 = time.perf_counter(), time.process_time()
    report = run(cfg)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    row = summary(report, cfg)
    row.update(
        run=label,
        wall_s=round(wall, 1),
        cpu_s=round(cpu, 1),
        max_rss_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        load_avg_start=[round(x, 2) for x in load_start],
        load_avg_end=[round(x, 2) for x in os.getloadavg()],
    )
    return row


def summary(r: SimReport, cfg: SimConfig) -> dict[str, Any]:
    loss_at = {e.at for e in cfg.churn if isinstance(e, TowerLoss)}
    first_loss = min(loss_at, default=None)
    joins_before = [j.connected_s for j in r.joins if first_loss is None or j.at < first_loss]
    joins_in_loss = [j.connected_s for j in r.joins if first_loss is not None and j.at > first_loss]
    row: dict[str, Any] = {
        "nodes": cfg.nodes,
        "live_at_end": r.nodes,
        "started": r.started,
        "topics": r.topics,
        "mesh": r.mesh,
        "towers": r.towers,
        "tower_fanout": r.tower_fanout,
        "start": "warm" if cfg.warm else "cold",
        "sim_seconds": r.seconds,
        "events": r.events,
        "connections_out": asdict(r.connections_out),
        "connections_in": asdict(r.connections_in),
        "tcp_connections": r.tcp_connections,
        "expected_peers": asdict(r.expected_peers),
        "saturated": r.saturated,
        "window": list(r.window),
        "node_msgs_per_s": asdict(r.node_msgs_per_s),
        "node_beacons_per_s": asdict(r.node_beacons_per_s),
        "node_heartbeats_per_s": asdict(r.node_heartbeats_per_s),
        "node_copies": asdict(r.node_copies),
        "tower_in_per_s": r.tower_in_per_s,
        "tower_relayed_per_s": r.tower_relayed_per_s,
        "tower_out_per_s": r.tower_out_per_s,
        "tower_peer_per_s": r.tower_peer_per_s,
        "tower_msgs_max_per_s": r.tower_msgs_max_per_s,
        "per_tower": [dict(asdict(t), msgs_per_s=t.msgs_per_s) for t in r.per_tower],
        "moves": r.moves,
        "converged_s": r.converged_s,
        "converged_at_end": r.converged_at_end,
        "expired": r.expired,
        "returned": r.returned,
        "refused": r.refused,
        "refused_full": r.refused_full,
        "beacons_dropped": r.beacons_dropped,
    }
    if cfg.churn:
        row["loss"] = [asdict(o) for o in r.outages]
        row["leave_dropped_s"] = _spread([x.dropped_s for x in r.leaves])
        row["join_connected_s"] = _spread(joins_before)
        row["join_in_loss_connected_s"] = _spread(joins_in_loss)
        row["pauses"] = {
            "count": len(r.pauses),
            "backlog_max": max((p.backlog for p in r.pauses), default=0),
            "beacons_dropped": sum(p.beacons_dropped for p in r.pauses),
            "expired_own": sum(p.expired_own for p in r.pauses),
            "disconnected_by": sum(p.disconnected_by for p in r.pauses),
        }
    if not cfg.warm:
        row["tower_series"] = [list(x) for x in r.tower_series]
    return row


def full_model(nodes: int, max_peers: int) -> dict[str, float]:
    """The full mesh at ``nodes`` without running it: every node announces ``*`` and
    subscribes ``B``, so each beacon goes to every node (its sender too)."""
    peers = min(nodes - 1, max_peers)
    return {
        "tower_out_per_s": float(nodes * nodes),
        "node_msgs_per_s": float(nodes + peers),
        "connections_out": float(peers),
    }


def ratios(rows: list[dict[str, Any]], full: dict[str, Any] | None) -> list[dict[str, Any]]:
    out = []
    max_peers = SimConfig().max_peers
    for row in rows:
        if row["mesh"] != "topic" or row["start"] != "warm":
            continue
        if full is not None and full["nodes"] == row["nodes"]:
            base = {
                "tower_out_per_s": full["tower_out_per_s"],
                "node_msgs_per_s": full["node_msgs_per_s"]["mean"],
                "connections_out": full["connections_out"]["mean"],
            }
            source = f"measured: the full mesh run at N={full['nodes']}"
        else:
            base = full_model(row["nodes"], max_peers)
            source = "model: the full mesh not run at this N (see model_check)"
        out.append(
            {
                "nodes": row["nodes"],
                "topics": row["topics"],
                "source": source,
                "full": base,
                "tower_out": row["tower_out_per_s"] / base["tower_out_per_s"],
                "node_msgs": row["node_msgs_per_s"]["mean"] / base["node_msgs_per_s"],
                "connections": row["connections_out"]["mean"] / base["connections_out"],
            }
        )
    return out


def model_check(full: dict[str, Any]) -> dict[str, Any]:
    model = full_model(full["nodes"], SimConfig().max_peers)
    measured = {
        "tower_out_per_s": full["tower_out_per_s"],
        "node_msgs_per_s": full["node_msgs_per_s"]["mean"],
        "connections_out": full["connections_out"]["mean"],
    }
    return {
        "nodes": full["nodes"],
        "model": model,
        "measured": measured,
        "measured_over_model": {k: measured[k] / model[k] for k in model},
    }


def cold_cost(cold: dict[str, Any], warm: dict[str, Any] | None) -> dict[str, Any]:
    """What the cold start's catch-up cost the tower, against the warm run's steady rates."""
    until = cold["converged_s"] or cold["sim_seconds"]
    series = [s for s in cold["tower_series"] if s[0] <= until + 1]
    ins = [s[1] for s in series]
    outs = [s[2] for s in series]
    out: dict[str, Any] = {
        "seconds": len(series),
        "tower_in_per_s_mean": sum(ins) / len(ins) if ins else 0.0,
        "tower_in_per_s_peak": max(ins, default=0),
        "tower_out_per_s_mean": sum(outs) / len(outs) if outs else 0.0,
        "tower_out_per_s_peak": max(outs, default=0),
    }
    if warm is not None:
        out["over_steady"] = {
            "tower_in_mean": out["tower_in_per_s_mean"] / warm["tower_in_per_s"],
            "tower_in_peak": out["tower_in_per_s_peak"] / warm["tower_in_per_s"],
            "tower_out_mean": out["tower_out_per_s_mean"] / warm["tower_out_per_s"],
            "tower_out_peak": out["tower_out_per_s_peak"] / warm["tower_out_per_s"],
        }
    return out


def _fmt(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f}"


def print_table(report: dict[str, Any]) -> None:
    err = sys.stderr
    print(
        f"{'run':<6} {'N':>6} {'T':>5} {'mesh':<5} {'towers':>7} {'conn mean/max':>14} "
        f"{'msgs/s':>8} {'copies':>6} {'tower in/s':>10} {'out/s':>11} {'peer/s':>8} "
        f"{'max tower/s':>11} {'lost':>5} {'relink s':>8} {'reconv s':>8} {'wall s':>7}",
        file=err,
    )
    for r in report["rows"]:
        loss = (r.get("loss") or [{}])[0]
        conn = f"{r['connections_out']['mean']:.1f}/{r['connections_out']['max']:.0f}"
        towers = f"{r['towers']}/{r['tower_fanout']}"
        print(
            f"{r['run']:<6} {r['nodes']:>6} {r['topics']:>5} {r['mesh']:<5} {towers:>7} "
            f"{conn:>14} {r['node_msgs_per_s']['mean']:>8.1f} "
            f"{r['node_copies']['mean']:>6.2f} {r['tower_in_per_s']:>10.0f} "
            f"{r['tower_out_per_s']:>11.0f} {r['tower_peer_per_s']:>8.0f} "
            f"{r['tower_msgs_max_per_s']:>11.0f} {loss.get('expired_during', '-'):>5} "
            f"{_fmt(loss.get('relinked_s')):>8} {_fmt(loss.get('converge_s')):>8} "
            f"{r['wall_s']:>7}",
            file=err,
        )
        for t in r["per_tower"] if r["towers"] > 1 else ():
            print(
                f"    tower {t['tower']}: in {t['in_per_s']:.0f}/s, from peers "
                f"{t['peer_in_per_s']:.0f}/s, to nodes {t['out_per_s']:.0f}/s, to peers "
                f"{t['peer_out_per_s']:.0f}/s: {t['msgs_per_s']:.0f} messages/s",
                file=err,
            )
    for x in report["ratios"]:
        print(
            f"topic/full N={x['nodes']} T={x['topics']}: tower out {x['tower_out']:.4f}, "
            f"node msgs {x['node_msgs']:.4f}, connections {x['connections']:.4f} ({x['source']})",
            file=err,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1000,10000", help="N, comma-separated")
    parser.add_argument("--topics", default="100,1000", help="T, comma-separated")
    parser.add_argument("--towers", type=int, default=1, help="towers (K)")
    parser.add_argument(
        "--tower-fanout", choices=("all", "one"), default="all",
        help="all: each node uses every tower; one: one each, the towers peered",
    )  # fmt: skip
    parser.add_argument("--loss", type=float, default=10.0, help="seconds tower 0 is lost")
    parser.add_argument(
        "--brief-above", type=float, default=2e6, metavar="MSGS",
        help="estimated messages a simulated second above which a run is brief",
    )  # fmt: skip
    parser.add_argument("--whole", action="store_true", help="no brief runs")
    parser.add_argument("--full-nodes", type=int, default=1000, help="0: no full mesh run")
    parser.add_argument("--cold-nodes", type=int, default=1000, help="0: no cold start")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="JSON report (default: benchmarks/results)")
    args = parser.parse_args()
    counts = [int(x) for x in args.nodes.split(",") if x]
    topics = [int(x) for x in args.topics.split(",") if x]
    if not counts or not topics or min(counts) <= STORES or min(topics) < 3:
        parser.error(f"--nodes must be above {STORES}, --topics at least 3")
    if args.towers < 1:
        parser.error("--towers must be at least 1")
    if args.loss <= SimConfig().timeout:
        parser.error("--loss must be longer than the 4 s expiry, or it shows nothing")
    report: dict[str, Any] = {
        "benchmark": "discovery_sim",
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "rows": [],
    }
    rows: list[dict[str, Any]] = report["rows"]
    for n in counts:
        for t in topics:
            estimate = estimated_msgs_per_s(n, t)
            brief = not args.whole and estimate > args.brief_above
            cfg = scenario(n, t, args.loss, brief, args.seed, args.towers, args.tower_fanout)
            row = measure(cfg, "brief" if brief else "whole")
            row["estimated_msgs_per_s"] = estimate
            rows.append(row)
    full = None
    if args.full_nodes:
        cfg = scenario(args.full_nodes, topics[0], args.loss, True, args.seed)
        full = measure(replace(cfg, mesh="full"), "full")
        rows.append(full)
        report["model_check"] = model_check(full)
    report["ratios"] = ratios(rows, full)
    if args.cold_nodes:
        cold_cfg = SimConfig(
            nodes=args.cold_nodes, topics=topics[0], stores=STORES, seed=args.seed,
            seconds=max(0, args.cold_nodes - 1 - BURST) / RATE + 10,
            window=(WINDOW[0] + 1.0, WINDOW[1] + 1.0),
        )  # fmt: skip
        cold = measure(cold_cfg, "cold")
        rows.append(cold)
        warm = next(
            (r for r in rows if r["nodes"] == cold_cfg.nodes and r["topics"] == cold_cfg.topics
             and r["mesh"] == "topic" and r["start"] == "warm"),
            None,
        )  # fmt: skip
        report["cold_start_cost"] = cold_cost(cold, warm)
    print_table(report)
    print(json.dumps(report, indent=2))
    out = args.out
    if out is None:
        RESULTS.mkdir(exist_ok=True)
        out = RESULTS / f"discovery-sim-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"JSON: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
