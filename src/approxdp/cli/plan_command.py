"""``plan``: the least ε for a target accuracy of a spec's queries, or the accuracy an ε buys.

Reads the queries of a spec file (:mod:`approxdp.cli.query_spec`, the format of ``release
batch``), never the data, and spends nothing (:mod:`approxdp.releases.accuracy`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import click
from rich.console import Console

from approxdp.cli.output import JSON_SCHEMA_VERSION, Number, emit, fmt, json_option, new_table
from approxdp.cli.query_spec import load_spec, targets
from approxdp.errors import InvalidParameterError
from approxdp.releases.accuracy import AccuracyPlan, accuracy_of, plan_for_accuracy
from approxdp.releases.plan import ReleasePlan
from approxdp.releases.specs import ContributionBounds, Neighbouring

__all__ = ["plan_command", "plan_dict"]

_POSITIVE = Number.of("positive")


def plan_dict(plan: AccuracyPlan) -> dict[str, Any]:
    """An :class:`~approxdp.releases.accuracy.AccuracyPlan` as a JSON object."""
    return {
        "epsilon": plan.epsilon, "delta": plan.delta, "level": plan.level,
        "secure": plan.secure,
        "queries": [{"label": q.label, "kind": q.kind, "sigma": q.sigma,
                     "half_width": q.half_width, "rmse": q.rmse,
                     "target_half_width": q.target_half_width, "target_rmse": q.target_rmse}
                    for q in plan.queries],
    }


@click.command("plan")
@click.argument("query_file", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--half-width", type=_POSITIVE, default=None, metavar="FLOAT",
              help="Target half-width of every interval (queries' own half_width first).")
@click.option("--rmse", type=_POSITIVE, default=None, metavar="FLOAT",
              help="Target RMSE of every query's noise (queries' own rmse first).")
@click.option("-e", "--epsilon", type=_POSITIVE, default=None, metavar="FLOAT",
              help="Instead of a target: the accuracy this ε buys.")
@click.option("-d", "--delta", type=Number.of("delta"),
              metavar="FLOAT", default=None, help="δ of the plan (default: the spec's).")
@click.option("--level", type=Number.of("level"), metavar="FLOAT",
              default=None, help="Confidence level of the intervals (default: the spec's, "
                                 "else 0.95).")
@click.option("--rows", type=click.IntRange(1), default=None,
              help="Rows a mean expects (its interval depends on its count).")
@json_option
def plan_command(
    query_file: Path, half_width: float | None, rmse: float | None, epsilon: float | None,
    delta: float | None, level: float | None, rows: int | None, as_json: bool,
) -> None:
    """The least ε whose intervals meet a target, for the queries of a QUERY_FILE file.

    \b
    Nothing is read from the data and nothing is spent. Examples:
      approxdp plan spec.toml --half-width 50 -d 1e-6
      approxdp plan spec.toml -e 1 -d 1e-6          (the accuracy ε = 1 buys)
    """
    parsed = load_spec(query_file)
    dlt = delta if delta is not None else parsed.delta
    if dlt is None:
        raise InvalidParameterError("give -d/--delta (or delta = ... in the spec)")
    lvl = level if level is not None else parsed.level
    table = parsed.table
    plan = ReleasePlan(
        parsed.queries, cast(Neighbouring, table.get("neighbouring", "add-remove")),
        ContributionBounds(table.get("privacy_unit"), table.get("max_partitions", 1),
                           table.get("max_rows_per_partition", 1)),
        parsed.weights,
    )
    method = table.get("method", "optimal")
    widths = [h if h is not None else half_width for h in parsed.half_widths]
    errors = [r if r is not None else rmse for r in parsed.rmses]
    if epsilon is not None:
        result = accuracy_of(plan, epsilon, dlt, method=method, level=lvl, rows=rows,
                             half_width=targets(widths), rmse=targets(errors))
    else:
        if targets(widths) is None and targets(errors) is None:
            raise InvalidParameterError(
                "give a target (--half-width or --rmse, or half_width/rmse in the spec's "
                "queries), or -e/--epsilon for the accuracy an ε buys"
            )
        result = plan_for_accuracy(plan, delta=dlt, half_width=targets(widths),
                                   rmse=targets(errors), level=lvl, method=method, rows=rows)
    data = {"command": "plan", "schema_version": JSON_SCHEMA_VERSION, "spec": str(query_file),
            "plan": plan_dict(result)}

    def render(console: Console) -> None:
        head = ("Accuracy at" if epsilon is not None else "Least") + (
            f" ε = {result.epsilon:.6g}, δ = {result.delta:g} ({result.level:.0%} intervals; "
            "nothing spent)")
        out = new_table(head)
        for column in ("query", "kind", "± half-width", "target", "RMSE", "σ"):
            out.add_column(column, justify="left" if column in ("query", "kind") else "right")
        for q in result.queries:
            target = ("" if q.target_half_width is None and q.target_rmse is None else
                      f"± {q.target_half_width:g}" if q.target_half_width is not None else
                      f"RMSE {q.target_rmse:g}")
            out.add_row(q.label, q.kind, fmt(q.half_width), target, fmt(q.rmse), fmt(q.sigma))
        console.print(out)

    emit(data, as_json, render)
