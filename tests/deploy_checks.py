"""Reading deploy/'s dashboards and rules for tests: the metric names and selectors of
PromQL expressions (a small tokenizer), a dashboard's expressions and structural problems,
a rules file's expressions; and a real Prometheus to query (Debian's ``prometheus``, beside
``promtool``). Used by tests/integration/test_deploy_dashboards.py."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from tests.procs import Proc
from tests.tools import require_tool

DATASOURCE = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}

# PromQL words that look like names: keywords, binary operators, modifiers.
_KEYWORDS = frozenset(
    "by without on ignoring group_left group_right bool and or unless offset inf nan".split()
)
_STRING = re.compile(r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`""")
_HIDDEN = (  # where an identifier is not a metric: label matchers, ranges, label lists, $vars
    re.compile(r"\{[^{}]*\}"),
    re.compile(r"\[[^\[\]]*\]"),
    re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)"),
    re.compile(r"\$\{?\w+\}?"),
)
_IDENT = re.compile(r"(?<![\w.$:])[A-Za-z_:][A-Za-z0-9_:]*")
_CALL = re.compile(r"(?:\s*(?:by|without)\s*\([^()]*\))?\s*\(")  # sum by (x) (...) too
_MATCHERS = re.compile(r"\s*(\{[^{}]*\})")
HISTOGRAM_SUFFIX = re.compile(r"_(?:bucket|sum|count)$")
_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*([^,)]*)")
_GRAFANA_VARIABLE = re.compile(r"\$\{?([A-Za-z_]\w*)")
GRAFANA_BUILTINS = frozenset({"__rate_interval", "__interval", "__range", "__all"})


def selectors(expr: str) -> list[tuple[str, str]]:
    """The vector selectors of a PromQL expression, as (metric name, its ``{...}`` label
    matchers or ""): identifiers that are not functions (followed by ``(``), keywords,
    label names (in matchers and grouping lists), nor in strings, ranges or Grafana
    variables."""
    # strings blanked to the same length, so that positions in both texts agree
    masked = _STRING.sub(lambda m: m[0][0] + " " * (len(m[0]) - 2) + m[0][-1], expr)
    hidden = bytearray(len(masked))
    for rx in _HIDDEN:
        for m in rx.finditer(masked):
            hidden[m.start() : m.end()] = b"\1" * (m.end() - m.start())
    out = []
    for m in _IDENT.finditer(masked):
        if hidden[m.start()] or m[0] in _KEYWORDS or _CALL.match(masked, m.end()):
            continue
        matchers = _MATCHERS.match(masked, m.end())
        out.append((m[0], expr[matchers.start(1) : matchers.end(1)] if matchers else ""))
    return out


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (:func:`selectors`); a histogram's
    ``_bucket``/``_sum``/``_count`` is its name."""
    return {HISTOGRAM_SUFFIX.sub("", name) for name, _ in selectors(expr)}


def panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in board.get("panels", []):
        yield panel
        yield from panel.get("panels", [])  # a collapsed row holds its panels


def dashboard_exprs(board: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard: panel targets and query variables (the
    metric of ``label_values(metric, label)``)."""
    exprs = [t["expr"] for p in panels(board) for t in p.get("targets", []) if "expr" in t]
    for var in board.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
        m = _LABEL_VALUES.match(query)
        exprs.append(m.group(1) if m else query)
    return exprs


def rule_exprs(text: str) -> list[str]:
    """The ``expr:`` of every rule in a rules file as deploy/prometheus/alerts.yml writes
    them: on one line, or folded (``>-``) on the more indented lines after it. (No YAML
    library in the project; promtool's rule count, checked below, catches a misread.)"""
    exprs: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)expr:\s*(.*)$", line)
        if not m:
            continue
        indent, value = len(m.group(1)), m.group(2).strip()
        if value[:1] in ("'", '"') and value[-1:] == value[:1]:
            exprs.append(value[1:-1].replace("''", "'") if value[0] == "'" else value[1:-1])
            continue
        if value not in (">-", ">", "|", "|-"):
            exprs.append(value)
            continue
        body = []
        for more in lines[i + 1 :]:
            if more.strip() and len(more) - len(more.lstrip()) <= indent:
                break
            body.append(more.strip())
        exprs.append(" ".join(b for b in body if b))
    return exprs


def structure_problems(board: dict[str, Any]) -> list[str]:
    """What would make Grafana refuse or mis-draw a dashboard, or leave a panel without
    data: unique ids, a gridPos inside 24 columns and not overlapping another, the
    datasource variable on every panel and target, an expression on every target, and
    every ``$variable`` defined."""
    problems: list[str] = []
    title = board.get("title", "?")
    for key in ("title", "uid", "schemaVersion", "panels", "templating"):
        if key not in board:
            problems.append(f"{title}: no {key}")
    if board.get("schemaVersion", 0) < 36:
        problems.append(f"{title}: schemaVersion {board.get('schemaVersion')} < 36")
    variables = {v["name"]: v for v in board.get("templating", {}).get("list", [])}
    ds = variables.get("DS_PROMETHEUS", {})
    if ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        problems.append(f"{title}: no datasource variable DS_PROMETHEUS of Prometheus")
    ids: set[int] = set()
    cells: dict[tuple[int, int], object] = {}
    for panel in panels(board):
        name = f"{title} / {panel.get('title', '?')}"
        pid = panel.get("id")
        if not isinstance(pid, int) or pid in ids:
            problems.append(f"{name}: id {pid!r} missing or not unique")
        ids.add(pid if isinstance(pid, int) else -1)
        pos = panel.get("gridPos", {})
        if not all(isinstance(pos.get(k), int) for k in "hwxy") or pos["x"] + pos["w"] > 24:
            problems.append(f"{name}: gridPos {pos!r}")
            continue
        mine = {
            (x, y)
            for x in range(pos["x"], pos["x"] + pos["w"])
            for y in range(pos["y"], pos["y"] + pos["h"])
        }
        if mine & cells.keys():
            problems.append(f"{name}: overlaps panel {cells[min(mine & cells.keys())]}")
        cells.update(dict.fromkeys(mine, pid))
        if panel.get("type") == "row":
            continue
        if panel.get("datasource") != DATASOURCE:
            problems.append(f"{name}: datasource {panel.get('datasource')!r}")
        targets = panel.get("targets") or []
        if not targets:
            problems.append(f"{name}: no targets")
        if len({t.get("refId") for t in targets}) != len(targets):
            problems.append(f"{name}: refIds not unique")
        for t in targets:
            if not str(t.get("expr", "")).strip():
                problems.append(f"{name}: a target without expr")
            if t.get("datasource", DATASOURCE) != DATASOURCE:
                problems.append(f"{name}: target datasource {t.get('datasource')!r}")
    used = set(_GRAFANA_VARIABLE.findall(json.dumps([board.get("panels"), board["templating"]])))
    for var in sorted(used - variables.keys() - GRAFANA_BUILTINS):
        problems.append(f"{title}: ${var} is not a variable of the dashboard")
    return problems


def require(tool: str) -> str:
    """The path of ``tool`` (promtool or prometheus, from Debian's prometheus)."""
    return require_tool(tool, "prometheus")


def load(path: Path) -> dict[str, Any]:
    board = json.loads(path.read_text())
    assert isinstance(board, dict)
    return board


JOBS = ("dafka-tower", "dafka-store", "dafka-console", "dafka-producer", "dafka-consumer")


class Prometheus:
    """A real Prometheus (Debian's, beside promtool) scraping ``jobs``' targets (their
    metrics URLs, by job name) every second, its API on ``port``."""

    def __init__(self, binary: str, home: Path, jobs: dict[str, list[str]], port: int) -> None:
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
            "scrape_configs": [
                {
                    "job_name": job,
                    "static_configs": [{"targets": [urlsplit(u).netloc for u in urls]}],
                }
                for job, urls in jobs.items()
            ],
        }
        (home / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        self.api = f"http://127.0.0.1:{port}"
        self.proc = Proc(
            [
                binary,
                f"--config.file={home / 'prometheus.yml'}",
                f"--storage.tsdb.path={home / 'data'}",
                f"--web.listen-address={urlsplit(self.api).netloc}",
                "--log.level=warn",
            ]
        )


class QueryError(AssertionError):
    """Prometheus refused or failed a query (its message)."""


def query(api: str, promql: str) -> list[dict[str, Any]]:
    """An instant query's result (nothing while Prometheus is not yet answering)."""
    url = f"{api}/api/v1/query?{urlencode({'query': promql})}"
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            answer = json.loads(reply.read())
    except urllib.error.HTTPError as exc:  # 400, 422: the query, not the server
        raise QueryError(json.loads(exc.read()).get("error", str(exc))) from None
    except OSError:
        return []
    result = answer["data"]["result"]
    assert answer["status"] == "success" and isinstance(result, list), answer
    return result


def filled(expr: str) -> str:
    """A dashboard expression as Grafana sends it with every variable at *All*."""
    expr = re.sub(r"\$__(?:rate_interval|range)\b", "1m", expr)
    return re.sub(r"\$\{?\w+\}?", ".*", expr)


def failing(exprs: list[str], api: str) -> dict[str, str]:
    """The expressions Prometheus cannot evaluate on the fleet's series, with its error."""
    out = {}
    for expr in exprs:
        try:
            query(api, filled(expr))
        except QueryError as exc:
            out[expr] = str(exc)
    return out
