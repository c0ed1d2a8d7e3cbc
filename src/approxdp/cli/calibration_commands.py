"""``calibrate``, ``profile`` and ``epsilon``: the Gaussian mechanism's noise and privacy.

- ``calibrate``: σ for (ε, δ, Δ) under every calibration method, whether that σ is really
  (ε, δ)-DP (or -pDP) by the exact profile (Zhao et al. Thm 2, Thm 6), and its excess over the
  optimum.
- ``profile``: the exact privacy profile δ(ε) of a given σ over a range of ε.
- ``epsilon``: the least ε for a σ at one or more δ (inverse of the profile).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import click
import numpy as np
from rich.console import Console

from approxdp.calibration import CALIBRATION_METHODS
from approxdp.cli.output import JSON_SCHEMA_VERSION, Number, emit, fmt, json_option, new_table
from approxdp.errors import InvalidParameterError
from approxdp.profiles import gaussian_epsilon
from approxdp.reports.calibration import NOTION_NAMES, Notion, calibration_report, log_profile

__all__ = [
    "calibrate_command",
    "epsilon_command",
    "profile_command",
    "render_calibration",
]


def render_calibration(console: Console, report: dict[str, Any]) -> None:
    """Draw a :func:`calibration_report` as a Rich table."""
    notion = NOTION_NAMES[report["notion"]]
    table = new_table(
        title=(
            f"Gaussian noise for ({report['epsilon']:g}, {report['delta']:g})-{notion}, "
            f"sensitivity Δ = {report['sensitivity']:g}"
        ),
        caption=(
            f"true δ: the exact {notion} profile of that σ at ε (Zhao et al. Thm 2/6); "
            f"× {report['reference_method']}: σ relative to the least σ that is {notion}."
        ),
    )
    table.add_column("method", style="bold")
    table.add_column("σ", justify="right")
    table.add_column(f"× {report['reference_method']}", justify="right")
    table.add_column("true δ", justify="right")
    table.add_column(f"{notion}?", justify="center")
    table.add_column("note")
    for row in report["methods"]:
        if not row["defined"]:
            table.add_row(row["method"], "—", "—", "—", "—", row["reason"], style="dim")
            continue
        ratio = row["ratio_to_optimal"]
        note = ""
        if row["fails_above_epsilon"] is not None:
            note = f"fails {notion} above ε = {fmt(row['fails_above_epsilon'], 4)}"
        verdict = "[green]yes[/]" if row["private"] else "[bold red]NO[/]"
        table.add_row(
            row["method"],
            fmt(row["sigma"]),
            "n/a" if ratio is None else f"{ratio:.4f}",
            fmt(row["true_delta"], 4),
            verdict,
            note,
        )
    console.print(table)


_EPSILON = Number.of("epsilon")
_DELTA = Number.of("delta")
_SENSITIVITY = Number.of("sensitivity")
_SIGMA = Number.of("sigma")
_epsilon_opt = click.option("-e", "--epsilon", type=_EPSILON, metavar="FLOAT", required=True,
                            help="ε >= 0.")
_delta_opt = click.option("-d", "--delta", type=_DELTA, metavar="FLOAT", required=True,
                          help="δ in (0, 1).")
_sensitivity_opt = click.option(
    "-s", "--sensitivity", type=_SENSITIVITY, metavar="FLOAT", default=1.0, show_default=True,
    help="ℓ2-sensitivity Δ of the query.",
)
_notion_opt = click.option(
    "--notion", type=click.Choice(["dp", "pdp"]), default="dp", show_default=True,
    help="(ε, δ)-DP, or the stronger probabilistic DP (P[|privacy loss| > ε] <= δ).",
)
_sigma_opt = click.option("--sigma", type=_SIGMA, metavar="FLOAT", required=True,
                          help="Noise σ > 0.")


@click.command("calibrate")
@_epsilon_opt
@_delta_opt
@_sensitivity_opt
@click.option(
    "-m", "--method", "methods", multiple=True, type=click.Choice(list(CALIBRATION_METHODS)),
    help="Only these methods (repeatable); default: all.",
)
@_notion_opt
@json_option
def calibrate_command(
    epsilon: float, delta: float, sensitivity: float, methods: tuple[str, ...],
    notion: Notion, as_json: bool,
) -> None:
    """σ for (ε, δ, Δ) under every calibration method, checked against the exact profile.

    Marks which methods are really (ε, δ)-private there (the classical formulas fail at
    large ε) and how much more noise each adds than the optimum.

    Example: approxdp calibrate -e 1 -d 1e-5
    """
    report = calibration_report(epsilon, delta, sensitivity, notion, methods)
    emit(report, as_json, lambda console: render_calibration(console, report))


#: Most grid points ``profile --points`` evaluates (each is one row of output).
MAX_PROFILE_POINTS = 10_000
#: The default grid runs from where δ(ε) is this (or from 0 if δ(0) is below it) ...
_GRID_TOP_DELTA = 0.5
#: ... to where δ(ε) has fallen to this.
_GRID_BOTTOM_DELTA = 1e-10


def _profile_epsilons(
    sigma: float, sensitivity: float, notion: Notion, epsilons: Sequence[float],
    eps_max: float | None, points: int,
) -> np.ndarray:
    """The ε grid of ``profile``: the given ε, else ``points`` even steps over the range where
    δ(ε) falls from 1/2 (or from δ(0), if smaller) to 1e-10 — for small σ that range lies far
    from 0 (around Δ²/(2σ²)), so a grid from 0 would show δ = 1 on almost every row."""
    if epsilons:
        return np.asarray(epsilons, dtype=np.float64)
    if not 2 <= points <= MAX_PROFILE_POINTS:
        raise InvalidParameterError(
            f"--points must be in [2, {MAX_PROFILE_POINTS}], got --points {points}"
        )
    low = 0.0
    if float(log_profile(0.0, sigma, sensitivity, notion)) > math.log(_GRID_TOP_DELTA):
        low = _epsilon_near(sigma, sensitivity, notion, _GRID_TOP_DELTA)
    if eps_max is None:
        # Far enough that the profile has fallen to 1e-10: the whole interesting range.
        eps_max = _epsilon_near(sigma, sensitivity, notion, _GRID_BOTTOM_DELTA)
        if not eps_max > 0:
            eps_max = 1.0
    elif not (eps_max > 0 and math.isfinite(eps_max)):
        raise InvalidParameterError(f"--eps-max must be in (0, inf), got --eps-max {eps_max:g}")
    if low >= eps_max:
        low = 0.0
    return np.linspace(low, eps_max, points)


def _epsilon_near(sigma: float, sensitivity: float, notion: Notion, delta: float) -> float:
    """The ε where the profile crosses ``delta``, for placing a grid (not for accounting: that
    is :func:`gaussian_epsilon`, rounded to the private side with a margin that grows with ε).
    Bisection on the exact log profile, within [0, gaussian_epsilon]; 0.0 if not finite."""
    hi = float(gaussian_epsilon(sigma, delta, sensitivity, notion))
    if not math.isfinite(hi):
        return 0.0
    lo, target = 0.0, math.log(delta)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if float(log_profile(mid, sigma, sensitivity, notion)) > target:
            lo = mid
        else:
            hi = mid
    return hi


def _epsilon_digits(grid: np.ndarray) -> int:
    """Significant digits that tell the grid's ε apart (6, or more for a narrow range far from
    0, e.g. 5.00000e17 + k·6.4e8 for σ = 1e-9)."""
    if grid.size < 2:
        return 6
    steps = np.diff(np.sort(grid))
    step = float(np.min(steps[steps > 0])) if np.any(steps > 0) else 0.0
    top = float(np.max(np.abs(grid)))
    if step <= 0 or top <= 0:
        return 6
    return int(min(17, max(6, math.ceil(math.log10(top / step)) + 2)))


@click.command("profile")
@_sigma_opt
@_sensitivity_opt
@_notion_opt
@click.option(
    "-e", "--epsilon", "epsilons", type=_EPSILON, metavar="FLOAT", multiple=True,
    help="Evaluate at these ε (repeatable); default: an even grid up to --eps-max, from 0 or, "
         "where δ(0) > 1/2 (small σ), from the ε where δ falls to 1/2.",
)
@click.option(
    "--eps-max", type=Number.of("epsilon_positive"), metavar="FLOAT",
    default=None,
    help="Largest ε of the grid; default: where δ(ε) falls to 1e-10.",
)
@click.option("--points", type=int, default=11, show_default=True,
              help=f"Grid points (2 to {MAX_PROFILE_POINTS}).")
@json_option
def profile_command(
    sigma: float, sensitivity: float, notion: Notion, epsilons: tuple[float, ...],
    eps_max: float | None, points: int, as_json: bool,
) -> None:
    """The exact privacy profile δ(ε) of Gaussian noise σ (Zhao et al. Thm 2; pDP: Thm 6).

    Computed in log space, so δ far below 1e-300 keeps its digits (log δ is shown too).

    Example: approxdp profile --sigma 4 --points 6
    """
    grid = _profile_epsilons(sigma, sensitivity, notion, epsilons, eps_max, points)
    logs = np.atleast_1d(log_profile(grid, sigma, sensitivity, notion))
    rows = [
        {"epsilon": float(e), "delta": math.exp(float(lg)), "log_delta": float(lg)}
        for e, lg in zip(grid, logs, strict=True)
    ]
    data = {
        "command": "profile",
        "schema_version": JSON_SCHEMA_VERSION,
        "sigma": sigma,
        "sensitivity": sensitivity,
        "notion": notion,
        "points": rows,
    }

    def render(console: Console) -> None:
        table = new_table(
            title=(f"Privacy profile of Gaussian noise σ = {sigma:g}, Δ = {sensitivity:g} "
                   f"({NOTION_NAMES[notion]})"),
            caption=f"the mechanism is (ε, δ(ε))-{NOTION_NAMES[notion]} for every row"
            + ("" if epsilons or grid[0] <= 0 else
               f"; δ(ε) > 1/2 for every ε below the first row (δ(0) = "
               f"{fmt(math.exp(float(log_profile(0.0, sigma, sensitivity, notion))), 6)})"),
        )
        table.add_column("ε", justify="right")
        table.add_column("δ(ε)", justify="right")
        table.add_column("log10 δ(ε)", justify="right")
        digits = _epsilon_digits(grid)
        for row in rows:
            log10 = row["log_delta"] / math.log(10)
            table.add_row(fmt(row["epsilon"], digits), fmt(row["delta"], 6), fmt(log10, 6))
        console.print(table)

    emit(data, as_json, render)


@click.command("epsilon")
@_sigma_opt
@click.option("-d", "--delta", "deltas", type=_DELTA, metavar="FLOAT", multiple=True,
              required=True,
              help="δ in (0, 1) (repeatable).")
@_sensitivity_opt
@_notion_opt
@json_option
def epsilon_command(
    sigma: float, deltas: tuple[float, ...], sensitivity: float, notion: Notion, as_json: bool,
) -> None:
    """The least ε for which Gaussian noise σ is (ε, δ)-DP (or -pDP), for each δ.

    Rounded toward the private side: δ(ε) <= δ holds for the ε shown.

    Example: approxdp epsilon --sigma 4 -d 1e-5 -d 1e-8
    """
    results = [
        {"delta": delta, "epsilon": float(gaussian_epsilon(sigma, delta, sensitivity, notion))}
        for delta in deltas
    ]
    data = {
        "command": "epsilon",
        "schema_version": JSON_SCHEMA_VERSION,
        "sigma": sigma,
        "sensitivity": sensitivity,
        "notion": notion,
        "results": results,
    }

    def render(console: Console) -> None:
        table = new_table(f"ε of Gaussian noise σ = {sigma:g}, Δ = {sensitivity:g} "
                             f"({NOTION_NAMES[notion]})")
        table.add_column("δ", justify="right")
        table.add_column("least ε", justify="right")
        for row in results:
            table.add_row(fmt(row["delta"], 6), fmt(row["epsilon"], 8))
        console.print(table)

    emit(data, as_json, render)
