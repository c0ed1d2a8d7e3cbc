"""``calibrate``, ``profile`` and ``epsilon``: the Gaussian mechanism's noise and privacy.

- ``calibrate``: σ for (ε, δ, Δ) under every calibration method, whether that σ is really
  (ε, δ)-DP (or -pDP) by the exact profile (Zhao et al. Thm 2, Thm 6), and its excess over the
  optimum.
- ``profile``: the exact privacy profile δ(ε) of a given σ over a range of ε.
- ``epsilon``: the least ε for a σ at one or more δ (inverse of the profile).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import click
import numpy as np
from rich.console import Console

from approxdp.calibration import (
    CALIBRATION_METHODS,
    calibrate_gaussian,
    classical_failure_threshold,
)
from approxdp.cli.output import JSON_SCHEMA_VERSION, emit, fmt, json_option, new_table
from approxdp.errors import InvalidParameterError, NotPrivateWarning
from approxdp.profiles import (
    gaussian_epsilon,
    gaussian_log_delta,
    gaussian_log_pdp_delta,
)

__all__ = [
    "calibrate_command",
    "calibration_report",
    "epsilon_command",
    "profile_command",
    "render_calibration",
]

Notion = Literal["dp", "pdp"]

#: The method whose σ is the least private one for each notion (the "optimum").
REFERENCE = {"dp": "optimal", "pdp": "pdp-optimal"}
NOTION_NAMES = {"dp": "DP", "pdp": "pDP"}
_CLASSICAL = ("dwork-2006", "dwork-roth-2014", "wang-lecture")


def _log_profile(epsilon: Any, sigma: float, sensitivity: float, notion: Notion) -> Any:
    """Natural log of δ(ε) of the Gaussian with noise σ, DP or pDP (exact, log space)."""
    if notion == "dp":
        return gaussian_log_delta(epsilon, sigma, sensitivity)
    return gaussian_log_pdp_delta(epsilon, sigma, sensitivity)


def _method_row(
    name: str, epsilon: float, delta: float, sensitivity: float, notion: Notion,
    reference_sigma: float,
) -> dict[str, Any]:
    m = CALIBRATION_METHODS[name]
    row: dict[str, Any] = {
        "method": name,
        "target_notion": m.notion,
        "closed_form": m.closed_form,
        "source": m.source,
        "defined": True,
        "reason": None,
        "sigma": None,
        "ratio_to_optimal": None,
        "true_delta": None,
        "log_true_delta": None,
        "private": None,
        "fails_above_epsilon": None,
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotPrivateWarning)
            sigma = float(calibrate_gaussian(epsilon, delta, sensitivity, method=name,
                                             allow_non_private=True))
    except InvalidParameterError as exc:  # outside the method's domain (δ too big, ε = 0)
        row.update(defined=False, reason=str(exc))
        return row
    row["sigma"] = sigma
    if reference_sigma > 0:
        row["ratio_to_optimal"] = sigma / reference_sigma
    if sensitivity == 0 or math.isinf(sigma):
        log_true = -math.inf  # nothing to hide: exactly private
    else:
        log_true = float(_log_profile(epsilon, sigma, sensitivity, notion))
    row["log_true_delta"] = log_true
    row["true_delta"] = math.exp(log_true)
    row["private"] = log_true <= math.log(delta)
    if name in _CLASSICAL:
        row["fails_above_epsilon"] = float(classical_failure_threshold(delta, name, notion))
    return row


def calibration_report(
    epsilon: float, delta: float, sensitivity: float, notion: Notion = "dp",
    methods: Sequence[str] = (),
) -> dict[str, Any]:
    """The ``calibrate`` JSON object: every method's σ and its exact verdict at (ε, δ, Δ).

    Raises:
        ApproxDPError: ε, δ or Δ out of range (checked by the optimal calibration first).
    """
    reference = REFERENCE[notion]
    if notion == "pdp" and epsilon == 0:
        raise InvalidParameterError(
            "epsilon must be > 0 for notion 'pdp' (no Gaussian is (0, δ)-pDP for δ < 1), "
            "got epsilon=0; use --notion dp"
        )
    reference_sigma = float(calibrate_gaussian(epsilon, delta, sensitivity, method=reference))
    names = list(dict.fromkeys(methods)) if methods else list(CALIBRATION_METHODS)
    rows = [_method_row(n, epsilon, delta, sensitivity, notion, reference_sigma) for n in names]
    return {
        "command": "calibrate",
        "schema_version": JSON_SCHEMA_VERSION,
        "epsilon": epsilon,
        "delta": delta,
        "sensitivity": sensitivity,
        "notion": notion,
        "reference_method": reference,
        "reference_sigma": reference_sigma,
        "methods": rows,
    }


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


_epsilon_opt = click.option("-e", "--epsilon", type=float, required=True, help="ε >= 0.")
_delta_opt = click.option("-d", "--delta", type=float, required=True, help="δ in (0, 1).")
_sensitivity_opt = click.option(
    "-s", "--sensitivity", type=float, default=1.0, show_default=True,
    help="ℓ2-sensitivity Δ of the query.",
)
_notion_opt = click.option(
    "--notion", type=click.Choice(["dp", "pdp"]), default="dp", show_default=True,
    help="(ε, δ)-DP, or the stronger probabilistic DP (P[|privacy loss| > ε] <= δ).",
)
_sigma_opt = click.option("--sigma", type=float, required=True, help="Noise σ > 0.")


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


def _profile_epsilons(
    sigma: float, sensitivity: float, notion: Notion, epsilons: Sequence[float],
    eps_max: float | None, points: int,
) -> np.ndarray:
    if epsilons:
        return np.asarray(epsilons, dtype=np.float64)
    if points < 2:
        raise InvalidParameterError(f"points must be >= 2, got points={points}")
    if eps_max is None:
        # Far enough that the profile has fallen to 1e-10: the whole interesting range.
        eps_max = float(gaussian_epsilon(sigma, 1e-10, sensitivity, notion))
        if not eps_max > 0 or not math.isfinite(eps_max):
            eps_max = 1.0
    elif not (eps_max > 0 and math.isfinite(eps_max)):
        raise InvalidParameterError(f"eps-max must be in (0, inf), got eps-max={eps_max:g}")
    return np.linspace(0.0, eps_max, points)


@click.command("profile")
@_sigma_opt
@_sensitivity_opt
@_notion_opt
@click.option(
    "-e", "--epsilon", "epsilons", type=float, multiple=True,
    help="Evaluate at these ε (repeatable); default: an even grid from 0 to --eps-max.",
)
@click.option(
    "--eps-max", type=float, default=None,
    help="Largest ε of the grid; default: where δ(ε) falls to 1e-10.",
)
@click.option("--points", type=int, default=11, show_default=True, help="Grid points.")
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
    logs = np.atleast_1d(_log_profile(grid, sigma, sensitivity, notion))
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
            caption=f"the mechanism is (ε, δ(ε))-{NOTION_NAMES[notion]} for every row",
        )
        table.add_column("ε", justify="right")
        table.add_column("δ(ε)", justify="right")
        table.add_column("log10 δ(ε)", justify="right")
        for row in rows:
            log10 = row["log_delta"] / math.log(10)
            table.add_row(fmt(row["epsilon"], 6), fmt(row["delta"], 6), fmt(log10, 6))
        console.print(table)

    emit(data, as_json, render)


@click.command("epsilon")
@_sigma_opt
@click.option("-d", "--delta", "deltas", type=float, multiple=True, required=True,
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
