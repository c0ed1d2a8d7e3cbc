"""``demo``: the main job — the calibration table, then private releases on the Adult data.

The releases come from :func:`approxdp.cli.adult_demo.run_adult_demo` (half the budget on the
number of complete records, the mean age and two small histograms; half on the paper's
histogram over all nine categorical attributes, Zhao et al. §VI).
"""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from approxdp.cli.calibration_commands import render_calibration
from approxdp.cli.output import (
    JSON_SCHEMA_VERSION,
    Number,
    emit,
    fmt,
    fmt_values,
    json_option,
    new_table,
    progress,
    safe_text,
)
from approxdp.reports.calibration import calibration_report
from approxdp.reports.releases import release_dict

__all__ = ["demo_command"]

_TOP_CELLS = 5


def _render(console: Console, data: dict[str, Any]) -> None:
    render_calibration(console, data["calibration"])
    if data["releases"] is None:
        return
    eps, delta = data["epsilon"], data["delta"]
    console.print()
    table = new_table(
        title=(f"Private releases on UCI Adult (its complete records), half the budget: "
               f"ε = {eps / 2:g}, δ = {delta / 2:g}, jointly calibrated"),
        caption="Add/remove one record. Each value carries Gaussian noise of the std shown."
        + ("" if all(r.get("secure", True) for r in data["releases"]) else
           "\n[bold red]--seed: a seeded simulation, NOT private (do not publish)[/]"),
    )
    table.add_column("release")
    table.add_column("cell")
    table.add_column("value", justify="right", style="bold")
    table.add_column("95% CI", justify="right")
    table.add_column("noise std", justify="right")
    for release in data["releases"]:
        stds = fmt_values([c["std"] for c in release["cells"]], 4)  # one format per release
        for i, cell in enumerate(release["cells"]):
            key = " × ".join(safe_text(v) for v in cell["key"].values())
            table.add_row(safe_text(release["label"]) if i == 0 else "", key,
                          f"{cell['value']:,.2f}",
                          f"[{cell['ci_low']:,.2f}, {cell['ci_high']:,.2f}]",
                          stds[i], end_section=i == len(release["cells"]) - 1)
    console.print(table)

    paper = data["paper_histogram"]
    console.print()
    top = sorted(paper["cells"], key=lambda c: -c["value"])[:_TOP_CELLS]
    hist = new_table(
        f"The paper's histogram (Zhao et al. §VI), ε = {eps / 2:g}, δ = {delta / 2:g}, Δ = 1",
        caption=(f"All 9 categorical attributes: 54,001,920 possible cells, released by DP "
                 f"partition selection above a noisy count of {fmt(paper['threshold'], 4)}: "
                 f"{len(paper['cells'])} released, the largest {len(top)} shown. σ = "
                 f"{fmt(paper['sigma'], 4)} per cell (MSE σ² = {fmt(paper['sigma'] ** 2, 4)})."),
    )
    hist.add_column("cell")
    hist.add_column("value", justify="right", style="bold")
    for cell in top:
        hist.add_row(" × ".join(safe_text(v) for v in cell["key"].values()),
                     f"{cell['value']:,.1f}")
    console.print(hist)

    console.print()
    cmp = new_table(f"Noise each calibration needs for that histogram at the full budget "
                       f"(ε = {eps:g}, δ = {delta:g}, Δ = 1)")
    cmp.add_column("method")
    cmp.add_column("σ", justify="right")
    cmp.add_column("MSE", justify="right")
    cmp.add_column("(ε, δ)-DP?", justify="center")
    for c in data["comparisons"]:
        if c["sigma"] is None or c["sigma"] != c["sigma"]:
            cmp.add_row(c["method"], "n/a", "n/a", "—")
            continue
        cmp.add_row(c["method"], fmt(c["sigma"], 5), fmt(c["sigma"] ** 2, 5),
                    "[green]yes[/]" if c["private"] else "[bold red]NO[/]")
    console.print(cmp)


@click.command("demo")
@click.option("-e", "--epsilon", type=Number.of("epsilon_positive"),
              metavar="FLOAT", default=1.0, show_default=True, help="Total ε of the demo.")
@click.option("-d", "--delta", type=Number.of("delta"), metavar="FLOAT",
              default=1e-6, show_default=True, help="Total δ of the demo.")
@click.option("-s", "--sensitivity", type=Number.of("sensitivity"), metavar="FLOAT",
              default=1.0, show_default=True,
              help="Δ of the calibration table (the releases derive their own).")
@click.option("--no-releases", is_flag=True, help="Only the calibration table.")
@click.option("--seed", type=int, default=None,
              help="Seed the noise for a reproducible run (seeded noise is NOT secure).")
@json_option
def demo_command(
    epsilon: float, delta: float, sensitivity: float, no_releases: bool, seed: int | None,
    as_json: bool,
) -> None:
    """The main job: calibration table, then private releases on the bundled Adult data.

    Example: approxdp demo --epsilon 1 --delta 1e-6 --seed 7
    """
    calibration = calibration_report(epsilon, delta, sensitivity)
    data: dict[str, Any] = {
        "command": "demo",
        "schema_version": JSON_SCHEMA_VERSION,
        "epsilon": epsilon,
        "delta": delta,
        "sensitivity": sensitivity,
        "seed": seed,
        "calibration": calibration,
        "releases": None,
        "paper_histogram": None,
        "comparisons": None,
    }
    if not no_releases:
        from approxdp.cli.adult_demo import run_adult_demo

        with progress("Releasing private statistics of the Adult data"):
            demo = run_adult_demo(epsilon=epsilon, delta=delta, seed=seed)
        data["releases"] = [release_dict(r) for r in demo.releases]
        data["paper_histogram"] = release_dict(demo.paper_histogram)
        data["comparisons"] = [
            {"method": c.method, "sigma": c.sigma, "private": c.private,
             "ratio_to_used": c.ratio_to_used}
            for c in demo.comparisons
        ]
    emit(data, as_json, lambda console: _render(console, data))
