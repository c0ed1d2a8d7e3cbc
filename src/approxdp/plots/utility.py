"""Plots of the utility experiments: mean estimation and the Adult histogram (Zhao et al. Fig. 4,
5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from approxdp.experiments.adult_histogram import adult_histogram
from approxdp.experiments.mean_estimation import mean_estimation
from approxdp.experiments.methods import LABELS
from approxdp.experiments.utility import UtilityCurves
from approxdp.plots.style import log_axes, method_style, new_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_adult_histogram", "plot_mean_estimation", "plot_utility_panel"]

_AXIS = {"epsilon": "epsilon", "delta": "delta", "d": "dimension d"}


def _fixed_text(c: UtilityCurves) -> str:
    shown = {k: v for k, v in c.fixed.items() if k in ("epsilon", "delta", "d", "n")}
    return ", ".join(f"{k} = {v:g}" for k, v in shown.items())


def plot_utility_panel(ax: Axes, curves: UtilityCurves, letter: str) -> None:
    """Draw one panel of Fig. 4 or 5: measured error (markers) and its expectation (line)."""
    for j, m in enumerate(curves.methods):
        style = method_style(m, markers=True)
        ax.errorbar(curves.values, curves.error[j], yerr=curves.stderr[j], label=LABELS.get(m, m),
                    capsize=2, linewidth=1.0, **style)
    log_axes(ax, x=curves.parameter in ("delta", "d"), y=True)
    ax.set_xlabel(_AXIS[curves.parameter])
    ax.set_ylabel(curves.metric)
    ax.set_title(f"({letter}) {curves.metric} w.r.t. {_AXIS[curves.parameter]}\n"
                 f"{_fixed_text(curves)}", fontsize="small")


def plot_mean_estimation(
    panels: tuple[UtilityCurves, ...] | None = None, *, reps: int = 100, seed: int = 0,
) -> Figure:
    """Paper Fig. 4: ℓ2 error of private mean estimation against ε, δ and d."""
    data = panels if panels is not None else tuple(
        mean_estimation(p, reps=reps, seed=seed) for p in ("epsilon", "delta", "d")
    )
    fig, axes = new_figure(1, len(data), width=4.6 * len(data), height=4.4)
    for ax, c, letter in zip(axes[0], data, "abc", strict=False):
        plot_utility_panel(ax, c, letter)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(8, len(labels)),
               fontsize="small")
    reps_text = ", ".join(sorted({str(c.reps) for c in data}))
    fig.suptitle(f"Fig. 4: mean estimation, n = {int(data[0].fixed.get('n', 1000))}, "
                 f"l2-sensitivity sqrt(d)/n (mean of {reps_text} runs +- 1 s.e.)")
    return fig


def plot_adult_histogram(
    panels: tuple[UtilityCurves, ...] | None = None, *, reps: int = 20, seed: int = 0,
) -> Figure:
    """Paper Fig. 5: MSE of the private Adult histogram against ε and δ."""
    data = panels if panels is not None else tuple(
        adult_histogram(p, reps=reps, seed=seed) for p in ("epsilon", "delta")
    )
    fig, axes = new_figure(1, len(data), width=5.4 * len(data), height=4.4)
    for ax, c, letter in zip(axes[0], data, "ab", strict=False):
        plot_utility_panel(ax, c, letter)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(4, len(labels)),
               fontsize="small")
    cells = int(data[0].fixed.get("cells", np.nan))
    records = int(data[0].fixed.get("records", np.nan))
    fig.suptitle(f"Fig. 5: Adult histogram over all categorical attributes ({records:,} records,"
                 f" {cells:,} non-empty cells), add/remove, Delta = 1")
    return fig
