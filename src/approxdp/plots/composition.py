"""Plots of composition as k grows (the notes' plot, improved) and the averaging attack.

The notes: Near & Abuah, "Approximate Differential Privacy" (https://programming-dp.com/ch6.html).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from approxdp.experiments.composition import (
    AveragingAttack,
    CompositionCurves,
    averaging_attack,
    composition_curves,
)
from approxdp.plots.style import log_axes, new_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_averaging_attack", "plot_composition"]

_RULES = (
    ("basic", "basic (sequential): k eps", "#7f7f7f", "-"),
    ("advanced", "advanced, Dwork-Roth Thm 3.20", "#d62728", "--"),
    ("optimal", "optimal (Kairouz-Oh-Viswanath), exact", "#000000", "-"),
    ("gaussian", "exact Gaussian (Lemma 15), each step (eps, delta)-DP", "#2ca02c", "-"),
)


def _draw_rules(
    ax: Axes, c: CompositionCurves, mask: npt.NDArray[np.bool_], markers: bool = False
) -> None:
    ks = c.ks[mask]
    for attr, label, color, ls in _RULES:
        ax.plot(ks, getattr(c, attr)[mask], color=color, linestyle=ls, label=label,
                marker="." if markers else None)
    valid = c.simplified_valid[mask]
    simp = c.simplified[mask]
    ax.plot(ks, np.where(valid, simp, np.nan), color="#1f77b4", linestyle="-",
            label="notes' 2 eps sqrt(2k ln(1/delta)), valid")
    bad = ~valid
    if bad.any():
        grown = bad.copy()
        grown[:-1] |= bad[1:]
        ax.plot(ks, np.where(grown, simp, np.nan), color="#1f77b4", linestyle=":",
                label="notes' form where it is NOT a bound (underestimates)")


def plot_composition(
    curves: CompositionCurves | None = None, *, epsilon: float = 1.0, delta: float = 1e-5,
) -> Figure:
    """Total ε of k composed ε-DP steps (total δ fixed): the notes' plot for k ≤ 100 and
    k ≤ 10,000, with advanced (Thm 3.20), optimal (Kairouz et al. 2017) and exact Gaussian
    composition."""
    c = curves if curves is not None else composition_curves(epsilon, delta)
    fig, axes = new_figure(1, 2, width=12.0, height=4.6)
    small = c.ks <= 100
    _draw_rules(axes[0, 0], c, small)
    axes[0, 0].set_title("(a) k <= 100 (the notes' first plot)", fontsize="medium")
    _draw_rules(axes[0, 1], c, np.ones_like(small))
    axes[0, 1].set_title("(b) k <= 10,000 (the notes' second plot), log scales",
                         fontsize="medium")
    log_axes(axes[0, 0])
    log_axes(axes[0, 1], x=True, y=True)
    for ax in axes[0]:
        ax.set_xlabel("k (composed steps)")
        ax.set_ylabel(f"total epsilon at delta = {c.delta:g}")
    axes[0, 0].legend(fontsize="x-small", loc="upper left")
    fig.suptitle(f"Composition of k steps with eps = {c.epsilon:g} each "
                 f"(Gaussian step: sigma = {c.gaussian_sigma:.4g})")
    return fig


def plot_averaging_attack(
    attack: AveragingAttack | None = None, *, epsilon: float = 1.0, delta: float = 1e-5,
    reps: int = 400, seed: int = 0,
) -> Figure:
    """The notes' averaging attack: the attacker's error falls as 1/√k (a) while each rule
    charges a growing ε (b)."""
    a = attack if attack is not None else averaging_attack(epsilon, delta, reps=reps,
                                                           seed=seed)
    fig, axes = new_figure(1, 2, width=12.0, height=4.6)
    ax, cost = axes[0]
    ax.plot(a.ks, a.laplace_rmse, "s", color="#1f77b4", markersize=4,
            label="Laplace answers, measured")
    ax.plot(a.ks, a.laplace_theory, "-", color="#1f77b4", label="sqrt(2/k)/eps")
    ax.plot(a.ks, a.gaussian_rmse, "o", color="#2ca02c", markersize=4,
            label="Gaussian (DP-OPT) answers, measured")
    ax.plot(a.ks, a.gaussian_theory, "-", color="#2ca02c", label="sigma/sqrt(k)")
    log_axes(ax, x=True, y=True)
    ax.set_xlabel("k (noisy answers averaged)")
    ax.set_ylabel("RMSE of the attacker's average")
    ax.set_title(f"(a) the attack: {a.reps} simulated attacks per k", fontsize="medium")
    ax.legend(fontsize="x-small")
    _draw_rules(cost, a.cost, np.ones(a.ks.size, dtype=bool), markers=True)
    if 500 in a.ks:
        cost.axvline(500, color="grey", linewidth=0.8)
        cost.text(500, float(a.cost.basic.max()), " k = 500 (the notes)", fontsize="x-small",
                  va="top")
    log_axes(cost, x=True, y=True)
    cost.set_xlabel("k")
    cost.set_ylabel(f"privacy cost: total epsilon at delta = {a.delta:g}")
    cost.set_title("(b) what the k answers cost under each rule", fontsize="medium")
    cost.legend(fontsize="x-small", loc="upper left")
    fig.suptitle(f"Averaging attack on a sensitivity-1 query, eps = {a.epsilon:g} per answer")
    return fig
