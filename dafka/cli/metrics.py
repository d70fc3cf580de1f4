"""``--metrics-port`` and ``--metrics-host``: the Prometheus endpoint of a node command.

Like every option they also come from the environment (``DAFKA_METRICS_PORT``) and
the TOML file (``metrics-port = 9100`` at the top level or in the command's table).
``--metrics-topic-cap`` (a store's, a consumer's, ``dafka-local``'s) bounds the series of
the ``topic`` label.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:  # not at import: it loads prometheus_client (docs/consumer.md, start-up)
    from ..io.metrics import NodeMetrics

DEFAULT_HOST = "127.0.0.1"
"""dafka.io.metrics.DEFAULT_HOST, which tests/unit/test_cli_entry_points.py keeps equal."""
DEFAULT_TOPIC_CAP = 100
"""dafka.core.topic_counts.DEFAULT_TOPIC_CAP (not imported: the CLI's start-up stays
light), which tests/unit/test_metrics_topics.py keeps equal."""
MAX_TOPIC_CAP = 100_000

F = TypeVar("F", bound=Callable[..., Any])


def metrics_options(f: F) -> F:
    f = click.option(
        "--metrics-host",
        default=DEFAULT_HOST,
        show_default=True,
        help="Address the metrics endpoint binds (0.0.0.0: every interface).",
    )(f)
    return click.option(
        "--metrics-port",
        default=None,
        type=int,  # checked by the node: a bad port is one line, not click's usage text
        help="Serve Prometheus metrics over HTTP on this port (0: a free port, printed at "
        "start). Default: no endpoint. See docs/metrics.md.",
    )(f)


def metrics_topic_cap_option(f: F) -> F:
    """``--metrics-topic-cap``: of a node whose metrics carry a ``topic`` label (a store's
    records and bytes per topic, a consumer's lag)."""
    return click.option(
        "--metrics-topic-cap",
        default=DEFAULT_TOPIC_CAP,
        show_default=True,
        type=click.IntRange(0, MAX_TOPIC_CAP),
        help="Topics with metric series of their own (topic label); the others are summed "
        'under topic="_other". See docs/metrics.md.',
    )(f)


def announce(metrics: NodeMetrics | None) -> None:
    """One line on stderr saying where the metrics are served."""
    if metrics is not None and metrics.url is not None:
        click.echo(f"metrics on {metrics.url}", err=True)
