"""Plots of noise: Laplace versus Gaussian samples (the notes) and the max error of k queries."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from approxdp.experiments.max_error import MaxErrorResult, max_error_experiment
from approxdp.experiments.methods import LABELS
from approxdp.experiments.noise_samples import NoiseSamples, noise_samples
from approxdp.plots.style import log_axes, method_style, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_max_error", "plot_noise_histograms"]


def plot_noise_histograms(
    samples: NoiseSamples | None = None, *, epsilon: float = 1.0, delta: float = 1e-5,
    seed: int = 0,
) -> Figure:
    """Histograms of Laplace(1/ε) and Gaussian noise at the same ε (the notes' plot, fixed).

    The same number of samples from each (the notes drew 100 Laplace against 100,000
    Gaussian values), the classical and the exactly calibrated Gaussian, exact densities on
    top, and the tails on a log scale in a second panel.
    """
    data = samples if samples is not None else noise_samples(epsilon, delta, seed=seed)
    fig, axes = new_figure(1, 2, width=11.0, height=4.2)
    lo = -4.0 * data.sigma_classical
    bins = np.linspace(lo, -lo, 121)
    grid = np.linspace(lo, -lo, 600)
    b = data.laplace_scale
    series = (
        (data.laplace, f"Laplace, b = 1/eps = {b:.3g}", "#1f77b4",
         np.exp(-np.abs(grid) / b) / (2 * b)),
        (data.classical, f"Gaussian Dwork-2014, sigma = {data.sigma_classical:.3g}"
         + ("" if data.classical_private else " (NOT DP here)"), "#ff7f0e", None),
        (data.optimal, f"Gaussian DP-OPT, sigma = {data.sigma_optimal:.3g}", "#000000", None),
    )
    for values, label, color, density in series:
        for k, ax in enumerate(axes[0]):
            ax.hist(values, bins=bins, density=True, histtype="stepfilled" if k == 0 else "step",
                    alpha=0.35 if k == 0 else 0.9, color=color, label=label)
        if density is None:
            sigma = data.sigma_classical if color == "#ff7f0e" else data.sigma_optimal
            density = np.exp(-0.5 * (grid / sigma) ** 2) / (sigma * np.sqrt(2 * np.pi))
        for ax in axes[0]:
            ax.plot(grid, density, color=color, linewidth=1.0)
    axes[0, 0].set_title(f"(a) {data.laplace.size:,} samples each", fontsize="medium")
    axes[0, 1].set_title("(b) the same on a log scale: tails", fontsize="medium")
    log_axes(axes[0, 1], y=True)
    axes[0, 1].set_ylim(1e-5, None)
    for ax in axes[0]:
        ax.set_xlabel("noise added to a sensitivity-1 query")
        ax.set_ylabel("density")
    axes[0, 0].legend(fontsize="small", loc="upper left")
    fig.suptitle(f"Laplace vs Gaussian noise at eps = {data.epsilon:g} "
                 f"(Gaussian delta = {data.delta:g})")
    return fig


def plot_max_error(
    result: MaxErrorResult | None = None, *, epsilon: float = 1.0, delta: float = 1e-5,
    reps: int = 200, seed: int = 0,
) -> Figure:
    """E max error of k counting queries: Laplace (ℓ1) vs Gaussian (ℓ2), Wu's notes, Eq. 36–37.

    Markers: simulation; solid lines: exact expectations; dashed: the lecture's bounds with
    explicit constants. The vertical lines mark where the Gaussian starts to win.
    """
    data = result if result is not None else max_error_experiment(
        epsilon, delta, reps=reps, seed=seed)
    fig, axes = new_figure(1, 2, width=11.5, height=4.4)
    ax, rel = axes[0]
    k = data.ks
    ax.plot(k, data.laplace_measured, "s", color="#1f77b4", markersize=4,
            label="Laplace(k/eps), measured")
    ax.plot(k, data.laplace_exact, "-", color="#1f77b4", label="Laplace exact (k/eps) H_k")
    ax.plot(k, data.laplace_bound, "--", color="#1f77b4",
            label="Eq. 36 bound (k/eps)(1 + ln k)")
    for j, m in enumerate(data.gaussian_methods):
        style = method_style(m)
        ax.plot(k, data.gaussian_measured[j], "o", color=style["color"], markersize=4,
                label=f"Gaussian {LABELS.get(m, m)}, measured")
        ax.plot(k, data.gaussian_exact[j], "-", color=style["color"],
                label=f"Gaussian {LABELS.get(m, m)} exact")
    ax.plot(k, data.gaussian_bound, "--", color="#d62728",
            label="Eq. 37 bound 2 sqrt(k ln(2k) ln(2/delta))/eps")
    for x, dash, text in ((data.crossover_exact, "-", "exact expectations cross"),
                          (data.crossover_bound, "--", "bounds cross")):
        if x is not None:
            ax.axvline(x, color="grey", linestyle=dash, linewidth=0.8, label=f"{text}: k = {x}")
    log_axes(ax, x=True, y=True)
    ax.set_xlabel("k (number of counting queries)")
    ax.set_ylabel(r"$E\,\max_j |a_j - f_j(x)|$")
    ax.set_title(f"(a) expected max error, eps = {data.epsilon:g}, delta = {data.delta:g}",
                 fontsize="medium")
    ax.legend(fontsize="x-small", loc="upper left")
    for j, m in enumerate(data.gaussian_methods):
        rel.plot(k, data.gaussian_measured[j] / data.laplace_measured, "o-",
                 color=method_style(m)["color"], markersize=3,
                 label=f"Gaussian {LABELS.get(m, m)} / Laplace (measured)")
    rel.plot(k, data.gaussian_bound / data.laplace_bound, "--", color="#d62728",
             label="Eq. 37 / Eq. 36 bounds")
    rel.axhline(1.0, color="grey", linewidth=0.8)
    log_axes(rel, x=True, y=True)
    rel.set_xlabel("k")
    rel.set_ylabel("Gaussian error / Laplace error")
    rel.set_title(f"(b) ratio: the Gaussian wins below 1 (measured from k = "
                  f"{data.crossover_measured})", fontsize="medium")
    rel.legend(fontsize="x-small")
    fig.suptitle("k counting queries: Laplace (l1-sensitivity k) vs Gaussian "
                 "(l2-sensitivity sqrt k), Wu's notes, Eq. 36-37")
    return fig
