"""``compose``: the total privacy of a list of releases under each composition rule.

The release tokens and the rules are described in :mod:`approxdp.reports.composition`, which
computes the report; this module draws it and defines the command.
"""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from approxdp.cli.output import Number, emit, fmt, json_option, new_table, progress
from approxdp.reports.composition import RULES, composition_report, parse_release

__all__ = ["compose_command"]


def _render(console: Console, report: dict[str, Any]) -> None:
    table = new_table(
        title=(f"Total privacy of {report['count']} releases at total δ = {report['delta']:g}"),
        caption="ε: least total ε each rule certifies for the list as declared; × best: "
                "relative to the tightest rule; filter: the rule stays valid when each "
                "release's parameters are chosen after earlier outputs.",
    )
    table.add_column("rule", style="bold")
    table.add_column("total ε", justify="right")
    table.add_column("total δ", justify="right")
    table.add_column("× best", justify="right")
    table.add_column("kind")
    table.add_column("filter")
    table.add_column("how")
    for row in report["rules"]:
        ratio = row["ratio_to_best"]
        how = row["description"]
        if row["per_release_delta"] is not None:
            how += f"; each Gaussian at δ₀ = {row['per_release_delta']:.3g}"
        table.add_row(row["rule"], fmt(row["epsilon"]), fmt(row["delta"], 4),
                      "n/a" if ratio is None else f"{ratio:.3f}", row["kind"],
                      "yes" if row["filter"] else "no", how)
    console.print(table)


@click.command("compose")
@click.argument("releases", nargs=-1, required=True)
@click.option("-d", "--delta", type=Number.of("delta"), metavar="FLOAT",
              required=True, help="Total δ in (0, 1).")
@click.option(
    "-r", "--rule", "rules", multiple=True, type=click.Choice(list(RULES)),
    help="Only these rules (repeatable); default: all.",
)
@json_option
def compose_command(
    releases: tuple[str, ...], delta: float, rules: tuple[str, ...], as_json: bool
) -> None:
    """Total (ε, δ) of several releases: exact Gaussian, optimal, advanced and basic composition.

    RELEASES are tokens [Kx]gaussian:SIGMA[:SENSITIVITY], [Kx]laplace:SCALE[:SENSITIVITY]
    or [Kx]dp:EPSILON[:DELTA]; the K x prefix repeats a release K times.

    Example: approxdp compose 100xgaussian:20 -d 1e-5
    """
    parsed = [parse_release(t) for t in releases]
    report = composition_report(parsed, delta, rules, progress)
    emit(report, as_json, lambda console: _render(console, report))
