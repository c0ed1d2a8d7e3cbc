"""Plots of the calibrations: σ versus δ (Zhao et al. Fig. 2), failure regions (Fig. 1, 3), δ(ε)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from approxdp.experiments.failures import CLASSICAL, PUBLISHED_G, FailureRegion, failure_region
from approxdp.experiments.methods import LABELS
from approxdp.experiments.noise_curves import (
    FIG2_EPSILONS,
    PrivacyProfiles,
    SigmaCurves,
    privacy_profiles,
    sigma_versus_delta,
)
from approxdp.plots.style import log_axes, method_style, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_failure_regions", "plot_privacy_profiles", "plot_sigma_versus_delta"]

_ROMAN = ("i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi", "xii")


def _grow(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """``mask`` widened by one point each side, so that split curves still join."""
    out = mask.copy()
    out[1:] |= mask[:-1]
    out[:-1] |= mask[1:]
    return out


def plot_sigma_versus_delta(
    curves: SigmaCurves | None = None, *, epsilons: tuple[float, ...] = FIG2_EPSILONS
) -> Figure:
    """Paper Fig. 2: σ/Δ of every mechanism against δ, one panel per ε.

    Where a method's σ is not (ε, δ)-DP by the exact profile its curve is drawn faint and
    dotted (the classical formulas at large ε, which fall below DP-OPT there).

    Args:
        curves: precomputed :func:`~approxdp.experiments.noise_curves.sigma_versus_delta`;
            computed for ``epsilons`` when None.
        epsilons: panels to draw when ``curves`` is None.
    """
    data = curves if curves is not None else sigma_versus_delta(tuple(epsilons))
    n = len(data.epsilons)
    ncols = min(3, n)
    nrows = (n + ncols - 1) // ncols
    fig, axes = new_figure(nrows, ncols, width=max(4.3 * ncols, 8.0),
                           height=3.5 * nrows + (0.8 if ncols > 1 else 1.4))
    flat = axes.ravel()
    for i, eps in enumerate(data.epsilons):
        ax = flat[i]
        for j, m in enumerate(data.methods):
            sigma, ok = data.sigma[i, j], data.private[i, j]
            style = method_style(m)
            ax.plot(data.deltas, np.where(ok, sigma, np.nan), label=LABELS.get(m, m), **style)
            if not ok.all():
                bad = _grow(~ok)
                ax.plot(data.deltas, np.where(bad, sigma, np.nan), color=style["color"],
                        linestyle=":", alpha=0.45)
        log_axes(ax, x=True, y=True)
        ax.set_title(f"({_ROMAN[i]}) epsilon = {eps:g}" if i < len(_ROMAN)
                     else f"epsilon = {eps:g}")
        ax.set_xlabel("delta")
        ax.set_ylabel("noise amount sigma / Delta")
    for ax in flat[n:]:
        ax.set_visible(False)
    handles, labels = flat[0].get_legend_handles_labels()
    faint = flat[0].plot([], [], color="grey", linestyle=":", alpha=0.6)[0]
    fig.legend([*handles, faint], [*labels, "not (eps, delta)-DP"], loc="outside lower center",
               ncols=min(5 if ncols > 1 else 3, len(labels) + 1), fontsize="small")
    fig.suptitle("Fig. 2: Gaussian noise amount versus delta (Delta = 1)")
    return fig


def plot_failure_regions(
    notion: Literal["dp", "pdp"] = "dp",
    regions: tuple[FailureRegion, ...] | None = None,
    *,
    resolution: int = 160,
) -> Figure:
    """Paper Fig. 1 (``notion="dp"``) or Fig. 3 (``"pdp"``): where Dwork-2014/2006 fail.

    Shaded: the (δ, ε) where the classical σ is not (ε, δ)-DP (-pDP) by the exact profile;
    line: G(δ), the least failing ε; dots (Fig. 1): Zhao et al.'s Remark 2 values.
    """
    data = regions if regions is not None else tuple(
        failure_region(m, notion, resolution=resolution) for m in CLASSICAL
    )
    fig, axes = new_figure(1, len(data), width=5.2 * len(data), height=4.3)
    for ax, reg, part in zip(axes[0], data, ("i", "ii", "iii", "iv"), strict=False):
        ax.contourf(reg.deltas, reg.epsilons, reg.fails.astype(float), levels=[0.5, 1.5],
                    colors=["#f4a582"], alpha=0.8)
        ax.plot(reg.curve_deltas, reg.curve, color="#2166ac", label="G(delta): least failing eps")
        if reg.notion == "dp" and reg.method in PUBLISHED_G:
            pub = PUBLISHED_G[reg.method]
            ax.plot(list(pub), list(pub.values()), "o", color="black", markersize=4,
                    label="paper, Remark 2")
        log_axes(ax, x=True)
        ax.set_ylim(0.0, float(reg.epsilons[-1]))
        ax.set_xlabel("delta")
        ax.set_ylabel("epsilon")
        word = "DP" if reg.notion == "dp" else "pDP"
        ax.set_title(f"({part}) {LABELS.get(reg.method, reg.method)}: shaded = not "
                     f"(eps, delta)-{word}", fontsize="medium")
        ax.legend(loc="lower left", fontsize="small")
    number = 1 if notion == "dp" else 3
    word = "differential privacy" if notion == "dp" else "probabilistic DP"
    fig.suptitle(f"Fig. {number}: where the classical Gaussian mechanisms fail {word}")
    return fig


def plot_privacy_profiles(
    profiles: PrivacyProfiles | None = None,
    *,
    sigmas: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0),
) -> Figure:
    """Exact privacy profiles δ(ε) of the Gaussian mechanism (Zhao et al. Thm 2 and Thm 6)."""
    data = profiles if profiles is not None else privacy_profiles(tuple(sigmas))
    fig, axes = new_figure(1, 2, width=11.0, height=4.2)
    colors = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02"]
    for k, (ax, values, title) in enumerate(zip(
        axes[0], (data.dp, data.pdp),
        ("(a) delta_DP(eps): exact (eps, delta)-DP (Thm 2)",
         "(b) delta_pDP(eps) = P[|L| > eps] (Thm 6)"), strict=True,
    )):
        for i, s in enumerate(data.sigmas):
            ax.plot(data.epsilons, values[i], color=colors[i % len(colors)],
                    label=f"sigma = {s:g}")
            if k == 0:
                ax.plot(data.epsilons, data.pdp[i], color=colors[i % len(colors)],
                        linestyle=":", alpha=0.5)
        log_axes(ax, y=True)
        ax.set_ylim(1e-12, 1.5)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("delta")
        ax.set_title(title, fontsize="medium")
        ax.legend(fontsize="small")
    fig.suptitle(f"Gaussian privacy profiles, Delta = {data.sensitivity:g} "
                 "(dotted in (a): the pDP profile, always above)")
    return fig
