"""deploy/: the Grafana dashboards and the Prometheus rules name only metrics that exist.

Every PromQL expression of the dashboards (panels and template variables) and of
``deploy/prometheus/alerts.yml`` is read for the metric names it uses, and each name must be
in a real scrape of a tower, a store, a producer and a consumer started here (and of
``dafka console`` once it exists), or be a series Prometheus makes itself (``up``). A real
Prometheus scrapes the same nodes under the contract's job names, and each selector, with
its labels, must match series there. The rules, the example configuration and every
dashboard expression load in ``promtool`` (Debian's ``prometheus``), and ``promtool test
rules`` runs ``deploy/prometheus/alerts_test.yml``, where each alert has to fire on its
synthetic series and on nothing else. Each check is also shown failing on a broken copy."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from dafka import Consumer, Producer
from tests.admin import tower_args
from tests.deploy_checks import (
    HISTOGRAM_SUFFIX,
    JOBS,
    Prometheus,
    dashboard_exprs,
    failing,
    filled,
    load,
    metric_names,
    panels,
    query,
    require,
    rule_exprs,
    selectors,
    structure_problems,
)
from tests.procs import Proc, StoreProc, free_port, py, wait_until

pytestmark = pytest.mark.integration

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARDS = sorted((DEPLOY / "grafana").glob("*.json"))
ALERTS = DEPLOY / "prometheus" / "alerts.yml"

# Series Prometheus adds to every target itself: never in a node's own scrape.
PROMETHEUS_SERIES = frozenset({"up"})

# Counters whose series appear with their first event (a label value): in a healthy
# cluster Prometheus holds none, so their selectors are not asked to match anything.
SERIES_WITH_EVENTS = frozenset({"dafka_raft_refused_total"})


def unknown_names(exprs: list[str], scraped: set[str]) -> dict[str, set[str]]:
    """Names each expression uses that are neither scraped nor Prometheus's own."""
    known = scraped | PROMETHEUS_SERIES
    out = {e: metric_names(e) - known for e in exprs}
    return {e: names for e, names in out.items() if names}


# ------------------------------------------------------------------ promtool


def run_promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require("promtool"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_promtool_loads_the_rules_and_the_example_config() -> None:
    rules = run_promtool("check", "rules", "alerts.yml", cwd=ALERTS.parent)
    assert rules.returncode == 0, rules.stdout + rules.stderr
    found = re.search(r"SUCCESS: (\d+) rules found", rules.stdout + rules.stderr)
    assert found, rules.stdout
    # the expressions this module reads are all of them, so the names check covers every rule
    assert int(found.group(1)) == len(rule_exprs(ALERTS.read_text())) >= 5
    config = run_promtool("check", "config", "prometheus.yml", cwd=ALERTS.parent)
    assert config.returncode == 0, config.stdout + config.stderr
    assert "1 rule files found" in config.stdout + config.stderr  # it loads alerts.yml


def test_each_alert_fires_on_its_synthetic_series_and_a_broken_rule_fails(
    tmp_path: Path,
) -> None:
    """alerts_test.yml passes, and fails against rules that alert on the healthy series
    (the three promtool runs at once: each takes about a second)."""
    text = ALERTS.read_text()
    runs = {"as written": ALERTS.parent}
    for good, bad in (
        ('up{job="dafka-store"} == 0', 'up{job="dafka-store"} == 1'),
        (
            "max by (topic) (dafka_partitions_under_min_acks) > 0",
            "max by (topic) (dafka_partitions_under_min_acks) >= 0",
        ),
    ):
        assert text.count(good) == 1
        (tmp_path / bad).mkdir()
        (tmp_path / bad / "alerts.yml").write_text(text.replace(good, bad))
        shutil.copy(ALERTS.parent / "alerts_test.yml", tmp_path / bad)
        runs[bad] = tmp_path / bad
    procs = {
        what: subprocess.Popen(
            [require("promtool"), "test", "rules", "alerts_test.yml"],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for what, cwd in runs.items()
    }
    outs = {what: (p.communicate(timeout=60)[0], p.returncode) for what, p in procs.items()}
    out, code = outs.pop("as written")
    assert code == 0, out
    for bad, (out, code) in outs.items():
        assert code != 0 and "FAILED" in out, bad


def test_every_dashboard_expression_parses_in_promtool(tmp_path: Path) -> None:
    """Each panel's and variable's expression, with Grafana's variables filled in, loads as
    a recording rule (promtool parses it as Prometheus would); a broken one does not."""

    def rules(exprs: list[str]) -> str:
        rule = [{"record": f"dashboard:expr_{i}", "expr": filled(e)} for i, e in enumerate(exprs)]
        return json.dumps({"groups": [{"name": "dashboards", "rules": rule}]})  # JSON is YAML

    exprs = [e for p in DASHBOARDS for e in dashboard_exprs(load(p))]
    (tmp_path / "good.yml").write_text(rules(exprs))
    (tmp_path / "bad.yml").write_text(rules([*exprs[:3], "sum by (job (up)"]))
    good = run_promtool("check", "rules", "good.yml", cwd=tmp_path)
    assert good.returncode == 0, good.stdout + good.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in good.stdout + good.stderr
    bad = run_promtool("check", "rules", "bad.yml", cwd=tmp_path)
    assert bad.returncode != 0 and "dashboard:expr_3" in bad.stdout + bad.stderr


# ------------------------------------------------------------------ dashboards, offline


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('up{job="dafka-store"} == 0', {"up"}),
        (
            "histogram_quantile(0.99, sum by (instance, le) "
            '(rate(dafka_store_commit_seconds_bucket{instance=~"$instance"}[$__rate_interval])))',
            {"dafka_store_commit_seconds"},
        ),
        (
            'max by (job) (dafka_raft_commit_index{job="dafka-tower"}) - on (job) group_right '
            "dafka_raft_last_index",
            {"dafka_raft_commit_index", "dafka_raft_last_index"},
        ),
        (
            "rate(x_sum[5m]) / rate(x_count[5m]) > bool 1e3 and y offset 5m unless "
            "sum(z) without (kind)",
            {"x", "y", "z"},
        ),
        ('(sum(a{k="by (b)"}) or vector(0)) == 0', {"a"}),
        ("predict_linear(free[6h], 24 * 3600) < 0 and free / total < 0.4", {"free", "total"}),
        ('count(label_replace(m, "dst", "$1", "src", "(.*)")) by (dst)', {"m"}),
    ],
)
def test_the_extractor_finds_the_metric_names_of_an_expression(expr: str, names: set) -> None:
    assert metric_names(expr) == names


def test_selectors_keep_their_label_matchers() -> None:
    expr = (
        'sum by (le) (rate(x_bucket{a="b}", c=~"$v"}[5m])) / on (job) '
        'group_left y{job="j"} + z offset 1h'
    )
    assert selectors(expr) == [("x_bucket", '{a="b}", c=~"$v"}'), ("y", '{job="j"}'), ("z", "")]
    assert filled('rate(x{c=~"$v"}[$__rate_interval])') == 'rate(x{c=~".*"}[1m])'


def test_the_rules_reader_reads_one_line_and_folded_expressions() -> None:
    text = (
        "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up == 0\n"
        "        for: 1m\n      - alert: B\n        expr: >-\n          a > 1\n"
        "          and\n          b > 0\n        for: 1m\n"
        "      - alert: C\n        expr: 'c{k=\"v\"} > 0'\n"
    )
    assert rule_exprs(text) == ["up == 0", "a > 1 and b > 0", 'c{k="v"} > 0']


def test_every_dashboard_is_well_formed_and_the_check_catches_a_broken_one() -> None:
    boards = [load(p) for p in DASHBOARDS]
    assert [p.stem for p in DASHBOARDS] == [
        "dafka-cluster",
        "dafka-groups",
        "dafka-stores",
        "dafka-topics",
    ]
    assert len({b["uid"] for b in boards}) == len(boards)
    for board in boards:
        assert structure_problems(board) == []
        assert len(dashboard_exprs(board)) >= 10
    broken = copy.deepcopy(boards[0])
    panels = [p for p in broken["panels"] if p["type"] != "row"]
    panels[1]["id"] = panels[0]["id"]
    del panels[2]["datasource"]
    panels[3]["targets"][0]["expr"] = ""
    panels[4]["gridPos"] = dict(panels[5]["gridPos"])
    panels[6]["targets"][0]["expr"] += ' + on() x{t="$nope"}'
    found = "\n".join(structure_problems(broken))
    for wanted in ("not unique", "datasource None", "without expr", "overlaps", "$nope"):
        assert wanted in found, (wanted, found)


# ------------------------------------------------------------------ a real scrape


def scrape(url: str) -> set[str]:
    """Metric names of one scrape: each family's name and each sample's (``_total``,
    ``_bucket``, ``_sum``, ``_count``, ``_info`` included). A labelled counter declared
    with no series yet (``dafka_raft_refused_total{kind}`` before anything is refused)
    counts by its declared name: the code defines it, its series come with the events."""
    with urllib.request.urlopen(url, timeout=5) as reply:
        text = reply.read().decode()
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        if family.type == "counter":
            names.add(family.name + "_total")
        names.update(s.name for s in family.samples)
    return names | {HISTOGRAM_SUFFIX.sub("", n) for n in names}


def start_console(address: str, port: int) -> Proc:
    """``dafka console`` on ``port`` (it says ``console on http://HOST:PORT/ ...``)."""
    return Proc(py("dafka.cli.admin", "console", "--tower", address, "--bind", f"127.0.0.1:{port}"))


@dataclass
class Fleet:
    """Running nodes: the metric names they serve, their endpoints by Prometheus job, and
    the Prometheus scraping them (None without the binary)."""

    names: set[str]
    jobs: dict[str, list[str]]
    prometheus: Prometheus | None


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """A tower, a store, a producer, a consumer (a group member that has committed) and the
    console if there is one, each serving metrics, after records went in and out (a first
    producer's records read back from the store); they run until the module ends."""
    started: list[Proc] = []

    def kill_started() -> None:
        for proc in reversed(started):
            proc.kill()

    # ports chosen first, so that Prometheus scrapes them from the start: its scrape manager
    # applies targets only every 5 s, the first time 5 s after it starts
    taken: set[int] = set()
    jobs = list(JOBS)
    port = {job: free_port(taken) for job in jobs}
    targets = {job: [f"http://127.0.0.1:{port[job]}/metrics"] for job in jobs}
    with ExitStack() as stack:
        stack.callback(kill_started)
        binary = shutil.which("prometheus")
        home = tmp_path_factory.mktemp("prometheus")
        prom = Prometheus(binary, home, targets, free_port(taken)) if binary else None
        if prom is not None:
            started.append(prom.proc)
        tower = Proc(
            py(
                "tower",
                "--bind",
                "127.0.0.1:0",
                *tower_args(),
                "--metrics-port",
                str(port["dafka-tower"]),
            )
        )
        started.append(tower)
        address = "127.0.0.1:" + tower.wait_line(r"tower on tcp://127\.0\.0\.1:(\d+)").group(1)
        console = None
        if "dafka-console" in port:  # starting while the store does
            console = start_console(address, port["dafka-console"])
            started.append(console)
        store = StoreProc(
            tmp_path_factory.mktemp("store"), address, "--metrics-port", str(port["dafka-store"])
        )
        stack.callback(store.stop)
        with Producer("dash", towers=address, metrics_port=0) as gone:
            for i in range(20):
                gone.send(f"record {i}")
            gone.flush(timeout=30)
        # the first producer is gone: the consumer's records come from the store's FETCH
        # answers; this one stays to be scraped
        live = Producer("dash-live", towers=address, metrics_port=port["dafka-producer"])
        stack.enter_context(live)
        live.send("one")
        live.flush(timeout=30)
        consumer = stack.enter_context(
            Consumer(
                "dash",
                towers=address,
                group="dash",
                offset_reset="earliest",
                enable_auto_commit=False,
                heartbeat_interval=0.5,
                metrics_port=port["dafka-consumer"],
            )
        )
        got: list[object] = []
        deadline = time.monotonic() + 30
        while len(got) < 20 and time.monotonic() < deadline:
            got += consumer.poll_batch(20, timeout=0.5)
        assert len(got) == 20
        consumer.commit()
        if console is not None:
            console.wait_line(r"console on http://127\.0\.0\.1:\d+")
        names = set().union(*(scrape(u) for urls in targets.values() for u in urls))
        yield Fleet(names, targets, prom)


@pytest.fixture(scope="module")
def scraped(fleet: Fleet) -> set[str]:
    return fleet.names


@pytest.fixture(scope="module")
def prometheus(fleet: Fleet) -> str:
    """The API of the fleet's Prometheus once it has scraped every node."""
    require("prometheus")
    assert fleet.prometheus is not None
    api, targets = fleet.prometheus.api, sum(map(len, fleet.jobs.values()))
    wait_until(
        lambda: [s["value"][1] for s in query(api, "up")] == ["1"] * targets,
        20,
        interval=0.2,
        what=f"Prometheus to scrape the {targets} nodes",
    )
    return api


def everything() -> list[str]:
    """Every expression of the dashboards and the rules."""
    exprs = [e for p in DASHBOARDS for e in dashboard_exprs(load(p))]
    return exprs + rule_exprs(ALERTS.read_text())


def test_every_metric_of_the_dashboards_and_rules_is_in_a_real_scrape(scraped: set[str]) -> None:
    assert {"dafka_raft_has_leader", "dafka_store_records_in_total"} <= scraped
    assert "dafka_producer_ack_latency_seconds_bucket" in scraped
    assert unknown_names(everything(), scraped) == {}


def test_a_misspelled_metric_on_a_dashboard_fails_the_check(scraped: set[str]) -> None:
    board = load(DEPLOY / "grafana" / "dafka-stores.json")
    target = next(t for p in board["panels"] for t in p.get("targets", []))
    assert unknown_names(dashboard_exprs(board), scraped) == {}
    target["expr"] = target["expr"].replace("up{", "dafka_store_upp{", 1)
    assert "dafka_store_upp" in target["expr"]
    assert set().union(*unknown_names(dashboard_exprs(board), scraped).values()) == {
        "dafka_store_upp"
    }


def unmatched(exprs: list[str], api: str) -> list[str]:
    """The selectors of ``exprs`` (Grafana variables as ``.*``, i.e. *All*) with no series
    in Prometheus, but those of SERIES_WITH_EVENTS."""
    wanted = {
        name + filled(matchers)
        for expr in exprs
        for name, matchers in selectors(expr)
        if name not in SERIES_WITH_EVENTS
    }
    assert wanted
    return sorted(s for s in wanted if not query(api, s))


def test_every_selector_matches_series_in_a_real_prometheus(prometheus: str) -> None:
    """Names are not enough: each selector's job, labels and values (``job="dafka-store"``,
    ``topic=~"$topic"``) must match series of the fleet as a Prometheus configured like
    deploy/prometheus/prometheus.yml holds them. A wrong job name fails."""
    assert unmatched(everything(), prometheus) == []
    board = (DEPLOY / "grafana" / "dafka-stores.json").read_text()
    wrong = json.loads(board.replace('job=\\"dafka-store\\"', 'job=\\"dafka-stores\\"'))
    assert 'job="dafka-stores"' in json.dumps(dashboard_exprs(wrong)).replace("\\", "")
    assert len(unmatched(dashboard_exprs(wrong), prometheus)) >= 10


def test_every_expression_evaluates_on_the_fleet(prometheus: str) -> None:
    """Every panel's and rule's expression evaluates on real series without an error that
    only real labels show (many-to-many matching, a group_left on the wrong side)."""
    assert failing(everything(), prometheus) == {}
    wrong = "dafka_node_running + on () dafka_node_running"  # one series per node
    assert "many-to-many" in failing([wrong], prometheus)[wrong]


def empty_targets(boards: list[dict[str, Any]], api: str) -> list[str]:
    """Panel targets with no data on the fleet (Grafana's "No data"), but those of
    SERIES_WITH_EVENTS."""
    out = []
    for board in boards:
        for panel in panels(board):
            for target in panel.get("targets", []):
                if metric_names(target["expr"]) & SERIES_WITH_EVENTS:
                    continue
                if not query(api, filled(target["expr"])):
                    out.append(f"{board['title']} / {panel['title']}: {target['expr']}")
    return out


def test_every_panel_shows_data_on_a_healthy_fleet(prometheus: str) -> None:
    """With every variable at *All*, each panel has a value once every node was scraped
    twice and every series has two points (rate() and deriv() need them); a panel that
    selects nothing fails."""

    def twice() -> bool:  # up is 1 for a good scrape; the console's lag comes with a reading
        points = query(prometheus, '{__name__=~"dafka_.+|process_.+|python_.+"}[1m]')
        return (
            bool(query(prometheus, "min(sum_over_time(up[1m])) >= 2"))
            and min((len(s["values"]) for s in points), default=0) >= 2
        )

    wait_until(twice, 20, interval=0.2, what="two points of every series")
    boards = [load(p) for p in DASHBOARDS]
    assert empty_targets(boards, prometheus) == []
    board = copy.deepcopy(boards[0])  # the cluster: a tower that knows no leader
    target = next(t for p in panels(board) for t in p.get("targets", []))
    target["expr"] = 'dafka_raft_has_leader{job="dafka-tower"} == 0'
    assert len(empty_targets([board], prometheus)) == 1


def alert_rules() -> dict[str, str]:
    """alerts.yml's rules by alert name."""
    names = re.findall(r"^\s*- alert: (\w+)$", ALERTS.read_text(), flags=re.M)
    exprs = rule_exprs(ALERTS.read_text())
    assert len(names) == len(exprs)
    return dict(zip(names, exprs, strict=True))


def test_no_alert_holds_on_a_healthy_fleet(prometheus: str, tmp_path: Path) -> None:
    """A store, a tower, a leader, no lag, no refusals: no rule's condition holds (what
    ``for:`` would turn into an alert), but the disk ones if this machine's disk is that
    full; the same check on a rule alerting on the healthy state fails."""
    free = shutil.disk_usage(tmp_path)
    rules = alert_rules()
    if free.free / free.total < 0.4:
        rules = {k: v for k, v in rules.items() if "Disk" not in k}
    assert {name: query(prometheus, expr) for name, expr in rules.items()} == dict.fromkeys(
        rules, []
    )
    assert query(prometheus, rules["DafkaStoreDown"].replace("== 0", "== 1"))
    assert query(prometheus, rules["DafkaNoRaftLeader"].replace("== 0", "== 1"))


def test_the_readme_lists_exactly_the_metrics_used_and_every_alert() -> None:
    readme = (DEPLOY / "README.md").read_text()
    listed = readme[readme.index("## Metrics the dashboards and rules use") :]
    names = set(re.findall(r"`([a-z_]+)`", listed)) - {"dafka", "console"}
    assert names == set().union(*map(metric_names, everything()))
    # the table of alerts: each rule once, with its severity
    table = dict(re.findall(r"^\| `(Dafka\w+)` \| (\w+) \|", readme, flags=re.M))
    severity, current = {}, None
    for line in ALERTS.read_text().splitlines():
        if m := re.match(r"^\s*- alert: (\w+)$", line):
            current = m[1]
        elif m := re.match(r"^\s*severity: (\w+)$", line):
            severity[current] = m[1]
    assert table == severity and len(severity) == len(alert_rules())
