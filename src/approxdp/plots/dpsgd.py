"""ε of a DP-SGD run against the number of steps, under every accountant, for one or more σ."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from approxdp.experiments.dpsgd_curves import DPSGDCurves, dpsgd_curves
from approxdp.plots.style import ACCOUNTANT_STYLE, accountant_style, log_axes, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_dpsgd"]

#: One colour per noise multiplier when several are drawn (line style then says the accountant).
_SIGMA_COLORS = ("#000000", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#ff7f0e")
#: The accountants drawn for several noise multipliers: the two certified ones that stay close.
_SEVERAL = ("pld", "rdp")


def plot_dpsgd(
    curves: DPSGDCurves | Sequence[DPSGDCurves] | None = None,
    *,
    noise_multiplier: float | Sequence[float] = 1.1,
    sample_rate: float = 256 / 60000,
    max_steps: int = 14063,
    delta: float = 1e-5,
    points: int = 24,
) -> Figure:
    """ε(T) of DP-SGD at sampling rate q for each accountant, labelled with what its number is
    (an "approximation" may be below the true ε); the top axis counts epochs (1/q steps each).

    One noise multiplier: every accountant. Several: PLD (solid) and RDP (dashed), one colour
    per σ. ``curves`` (from :func:`~approxdp.experiments.dpsgd_curves`) draws precomputed data.
    """
    if curves is None:
        sigmas = ([float(noise_multiplier)] if isinstance(noise_multiplier, int | float)
                  else [float(s) for s in noise_multiplier])
        accountants = _SEVERAL if len(sigmas) > 1 else tuple(ACCOUNTANT_STYLE)
        runs = [dpsgd_curves(noise_multiplier=s, sample_rate=sample_rate, max_steps=max_steps,
                             delta=delta, points=points, accountants=accountants)
                for s in sigmas]
    else:
        runs = [curves] if isinstance(curves, DPSGDCurves) else list(curves)
    fig, axes = new_figure(1, 1, width=7.5, height=4.8)
    ax = axes[0, 0]
    several = len(runs) > 1
    for i, c in enumerate(runs):
        for name, eps in c.epsilons.items():
            style = accountant_style(name)
            if several:
                style["color"] = _SIGMA_COLORS[i % len(_SIGMA_COLORS)]
            label = f"{name} ({c.kinds[name]})"
            ax.plot(c.steps, eps, marker=".",
                    label=f"σ = {c.noise_multiplier:g}, {label}" if several else label, **style)
    first = runs[0]
    log_axes(ax, x=True, y=True)
    ax.set_xlabel("steps T")
    ax.set_ylabel(f"epsilon at delta = {first.delta:g}")
    top = ax.secondary_xaxis(
        "top", functions=(lambda t: t * first.sample_rate, lambda e: e / first.sample_rate)
    )
    top.set_xlabel("epochs")
    ax.legend(fontsize="x-small", loc="upper left")
    sigma_text = ("noise multipliers " + ", ".join(f"{c.noise_multiplier:g}" for c in runs)
                  if several else f"noise multiplier {first.noise_multiplier:g}")
    ax.set_title(f"DP-SGD, {sigma_text}, sampling rate {first.sample_rate:.4g} "
                 f"({first.sampling})", fontsize="medium")
    return fig
