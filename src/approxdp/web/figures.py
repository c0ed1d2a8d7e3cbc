"""The pages' figures, drawn with Matplotlib on the Agg canvas (:mod:`approxdp.plots.style`).

Shiny sends each one to the browser as an inline PNG: nothing is fetched from the internet and
no JavaScript plotting library is vendored.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from approxdp.experiments.failures import CLASSICAL, FailureRegion, failure_region
from approxdp.plots.calibration import plot_failure_regions
from approxdp.plots.style import accountant_style, log_axes, method_style, new_figure
from approxdp.profiles import gaussian_epsilon, gaussian_log_delta, gaussian_log_pdp_delta

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "FAILURE_EPSILON_MAX",
    "burn_down_figure",
    "epsilon_steps_figure",
    "failure_figure",
    "profile_curve",
    "profile_figure",
]

#: Top of the failure region's ε axis (as in Zhao et al. 2019, Fig. 1).
FAILURE_EPSILON_MAX = 20.0
_FAILURE_RESOLUTION = 60
_POINT: dict[str, Any] = {"marker": "*", "color": "#111111", "markersize": 14,
                          "markeredgecolor": "white", "linestyle": "none"}


def profile_curve(
    sigma: float, sensitivity: float, notion: str = "dp", epsilon: float = 0.0,
    points: int = 200,
) -> tuple[np.ndarray, np.ndarray]:
    """(ε grid, δ(ε)) of Gaussian noise σ: from 0 to past both ``epsilon`` and the ε where the
    profile falls to 1e-12 (or 1 when that is not finite)."""
    top = float(gaussian_epsilon(sigma, 1e-12, sensitivity, "pdp" if notion == "pdp" else "dp"))
    if not (math.isfinite(top) and top > 0):
        top = 1.0
    top = max(top, 1.25 * epsilon)
    grid = np.linspace(0.0, top, points)
    log = (gaussian_log_pdp_delta if notion == "pdp" else gaussian_log_delta)(
        grid, sigma, sensitivity
    )
    return grid, np.exp(np.asarray(log, dtype=np.float64))


def profile_figure(report: dict[str, Any], method: str = "optimal") -> Figure:
    """δ(ε) of the σ that ``method`` gives in a calibration report (and of the optimal σ, for
    comparison), with the asked-for (ε, δ) marked: a private σ's curve passes below it."""
    eps, delta, sens = report["epsilon"], report["delta"], report["sensitivity"]
    notion = report["notion"]
    rows = {r["method"]: r for r in report["methods"]}
    fig, axes = new_figure(1, 1, width=6.4, height=3.9)
    ax = axes[0, 0]
    shown = [report["reference_method"]] + ([method] if method != report["reference_method"]
                                            else [])
    for name in shown:
        row = rows.get(name)
        if row is None or row["sigma"] is None or not row["sigma"] > 0 or sens == 0:
            continue
        grid, values = profile_curve(row["sigma"], sens, notion, eps)
        verdict = "" if row["private"] else " (NOT private here)"
        ax.plot(grid, np.maximum(values, 1e-300), label=f"{name}: σ = {row['sigma']:.5g}"
                f"{verdict}", **method_style(name))
    ax.plot([eps], [delta], label=f"target (ε, δ) = ({eps:g}, {delta:g})", **_POINT)
    log_axes(ax, y=True)
    ax.set_ylim(max(1e-300, min(delta / 1e4, 1e-12)), 1.5)
    ax.set_xlabel("ε")
    ax.set_ylabel("δ(ε)")
    word = "DP" if notion == "dp" else "pDP"
    ax.set_title(f"Privacy profile δ(ε) ({word}), Δ = {sens:g}", fontsize="medium")
    ax.legend(fontsize="small")
    return _tight(fig)


@lru_cache(maxsize=2)
def _regions(notion: str) -> tuple[FailureRegion, ...]:
    kind: Literal["dp", "pdp"] = "pdp" if notion == "pdp" else "dp"
    return tuple(failure_region(m, kind, epsilon_max=FAILURE_EPSILON_MAX,
                                resolution=_FAILURE_RESOLUTION) for m in CLASSICAL)


def failure_figure(notion: str, epsilon: float, delta: float) -> Figure:
    """Zhao et al. Fig. 1 (DP) or Fig. 3 (pDP) — where the classical formulas are not private
    — with the asked-for (ε, δ) marked (at the top edge, with an arrow, when ε is above the
    axis)."""
    kind: Literal["dp", "pdp"] = "pdp" if notion == "pdp" else "dp"
    fig = plot_failure_regions(kind, _regions(kind))
    word = "DP" if kind == "dp" else "pDP"
    fig.suptitle(f"Where the classical σ is not (ε, δ)-{word} (shaded)", fontsize="medium")
    for ax, method in zip(fig.axes, CLASSICAL, strict=False):
        ax.set_title(method, fontsize="medium")
    shown = min(epsilon, FAILURE_EPSILON_MAX * 0.985)
    above = epsilon > FAILURE_EPSILON_MAX
    for ax in fig.axes:
        ax.plot([delta], [shown], label=f"your (ε, δ) = ({epsilon:g}, {delta:g})"
                + (" ↑ above the axis" if above else ""), **_POINT)
        ax.legend(loc="lower left", fontsize="small")
    return _tight(fig)


def _tight(fig: Figure) -> Figure:
    """Shiny redraws a figure at the size of its output, with the tight layout (it replaces a
    constrained one, with a warning): choose it here."""
    fig.set_layout_engine("tight")
    return fig


def epsilon_steps_figure(curve: dict[str, Any], delta: float) -> Figure:
    """ε after each number of steps under every accountant (log-log)."""
    fig, axes = new_figure(1, 1, width=6.4, height=3.9)
    ax = axes[0, 0]
    steps = curve["steps"]
    for name, values in curve["epsilon"].items():
        finite = [v if math.isfinite(v) else np.nan for v in values]
        ax.plot(steps, finite, label=name, **accountant_style(name, markers=True))
    log_axes(ax, x=True, y=True)
    ax.set_xlabel("steps T")
    ax.set_ylabel(f"ε at δ = {delta:g}")
    ax.set_title("DP-SGD: ε against the number of steps", fontsize="medium")
    ax.legend(fontsize="small")
    return _tight(fig)


def burn_down_figure(view: dict[str, Any]) -> Figure:
    """The ledger's remaining ε after each spend: a step line from the full budget down, one
    step per spend (numbered as in the spends table, which has their times)."""
    fig, axes = new_figure(1, 1, width=6.8, height=3.6)
    ax = axes[0, 0]
    total = view["budget"]["epsilon"]
    burn = view["burn_down"]
    if burn:
        index = [0, *(b["index"] for b in burn)]
        left = [total, *(max(0.0, b["remaining_epsilon"]) for b in burn)]
        ax.step(index, left, where="post", color="#2166ac", marker="o", markersize=4,
                label="remaining ε")
        ax.fill_between(index, left, step="post", color="#2166ac", alpha=0.12)
        ax.set_xlim(-0.2, index[-1] + 0.8)
        ax.xaxis.get_major_locator().set_params(integer=True)
    else:
        ax.text(0.5, 0.5, "no spends yet", ha="center", va="center", transform=ax.transAxes)
    ax.axhline(total, color="#999999", linestyle=":", label=f"budget ε = {total:g}")
    ax.set_ylim(0.0, total * 1.12 if total > 0 else 1.0)
    ax.set_xlabel("after spend #")
    ax.set_ylabel("remaining ε")
    ax.set_title(f"Burn-down ({view['composition']} composition)", fontsize="medium")
    ax.legend(fontsize="small", loc="lower left")
    ax.grid(True, alpha=0.3)
    return _tight(fig)
