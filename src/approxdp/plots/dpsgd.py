"""ε of a DP-SGD run against the number of steps, under every accountant."""

from __future__ import annotations

from typing import TYPE_CHECKING

from approxdp.experiments.dpsgd_curves import DPSGDCurves, dpsgd_curves
from approxdp.plots.style import accountant_style, log_axes, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_dpsgd"]

def plot_dpsgd(
    curves: DPSGDCurves | None = None,
    *,
    noise_multiplier: float = 1.1,
    sample_rate: float = 256 / 60000,
    max_steps: int = 14063,
    delta: float = 1e-5,
    points: int = 24,
) -> Figure:
    """ε(T) of DP-SGD for each accountant, labelled with what its number is (an
    "approximation" may be below the true ε); the top axis counts epochs (1/q steps each)."""
    c = curves if curves is not None else dpsgd_curves(
        noise_multiplier=noise_multiplier, sample_rate=sample_rate, max_steps=max_steps,
        delta=delta, points=points,
    )
    fig, axes = new_figure(1, 1, width=7.5, height=4.8)
    ax = axes[0, 0]
    for name, eps in c.epsilons.items():
        ax.plot(c.steps, eps, marker=".", label=f"{name} ({c.kinds[name]})",
                **accountant_style(name))
    log_axes(ax, x=True, y=True)
    ax.set_xlabel("steps T")
    ax.set_ylabel(f"epsilon at delta = {c.delta:g}")
    top = ax.secondary_xaxis(
        "top", functions=(lambda t: t * c.sample_rate, lambda e: e / c.sample_rate)
    )
    top.set_xlabel("epochs")
    ax.legend(fontsize="x-small", loc="upper left")
    ax.set_title(
        f"DP-SGD, noise multiplier {c.noise_multiplier:g}, sampling rate {c.sample_rate:.4g} "
        f"({c.sampling})", fontsize="medium",
    )
    return fig
