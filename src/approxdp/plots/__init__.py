"""Plots: each function returns a :class:`matplotlib.figure.Figure` (Agg canvas, no pyplot).

Matplotlib is imported only when a figure is built, never by ``import approxdp``. The data come
from :mod:`approxdp.experiments`; pass precomputed results to avoid recomputing them.

- ``plot_failure_regions``: Zhao et al. Fig. 1 (DP) and Fig. 3 (pDP);
- ``plot_sigma_versus_delta``: Zhao et al. Fig. 2;
- ``plot_mean_estimation``: Zhao et al. Fig. 4;
- ``plot_adult_histogram``: Zhao et al. Fig. 5;
- ``plot_privacy_profiles``: exact δ(ε) for given σ;
- ``plot_noise_histograms``: Laplace vs Gaussian noise (the notes);
- ``plot_composition``: composition rules as k grows (the notes, improved);
- ``plot_max_error``: k counting queries, Laplace vs Gaussian (Wu's notes, Eq. 36-37);
- ``plot_averaging_attack``: the notes' averaging attack and its cost.

:func:`render_plot` draws any of them by name (:data:`PLOTS`), as ``approxdp plot`` does.
"""

from __future__ import annotations

from approxdp.plots.calibration import (
    plot_failure_regions,
    plot_privacy_profiles,
    plot_sigma_versus_delta,
)
from approxdp.plots.composition import plot_averaging_attack, plot_composition
from approxdp.plots.dpsgd import plot_dpsgd
from approxdp.plots.noise import plot_max_error, plot_noise_histograms
from approxdp.plots.registry import PLOTS, PlotSpec, render_plot
from approxdp.plots.style import save_figure
from approxdp.plots.utility import plot_adult_histogram, plot_mean_estimation

__all__ = [
    "PLOTS",
    "PlotSpec",
    "plot_adult_histogram",
    "plot_averaging_attack",
    "plot_composition",
    "plot_dpsgd",
    "plot_failure_regions",
    "plot_max_error",
    "plot_mean_estimation",
    "plot_noise_histograms",
    "plot_privacy_profiles",
    "plot_sigma_versus_delta",
    "render_plot",
    "save_figure",
]
