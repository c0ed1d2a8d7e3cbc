"""The experiments of Zhao et al. 2019 (https://arxiv.org/abs/1911.12060) and of the lecture
notes (Near & Abuah, Wu's notes) as plain functions returning data (no plotting).

- :func:`recompute_table1` — Zhao et al. Table I with verdicts computed from the library;
- :func:`check_table2` — Tables II/III and Theorems 2, 3, 7 checked on grids;
- :func:`failure_region`, :func:`failure_thresholds` — Fig. 1, Fig. 3, Remark 2's G(δ);
- :func:`sigma_versus_delta`, :func:`privacy_profiles` — Fig. 2 and δ(ε) curves;
- :func:`mean_estimation` (Fig. 4), :func:`adult_histogram` (Fig. 5);
- :func:`noise_samples`, :func:`composition_curves`, :func:`averaging_attack`,
  :func:`max_error_experiment` — the lecture notes' experiments.

Figures of these data are drawn by :mod:`approxdp.plots`; :func:`approxdp.reproduction.reproduce`
runs all of them, with figures and a report, into a folder. This package imports neither.
"""

from __future__ import annotations

from approxdp.experiments.adult_histogram import adult_histogram, adult_histogram_counts
from approxdp.experiments.composition import (
    AveragingAttack,
    CompositionCurves,
    averaging_attack,
    composition_curves,
)
from approxdp.experiments.dpsgd_curves import DPSGDCurves, dpsgd_curves
from approxdp.experiments.failures import (
    PUBLISHED_G,
    FailureRegion,
    ThresholdRow,
    failure_region,
    failure_thresholds,
)
from approxdp.experiments.max_error import MaxErrorResult, max_error_experiment
from approxdp.experiments.mean_estimation import mean_estimation
from approxdp.experiments.methods import FIGURE_METHODS, LABELS, noise_amounts
from approxdp.experiments.noise_curves import (
    PrivacyProfiles,
    SigmaCurves,
    privacy_profiles,
    sigma_versus_delta,
)
from approxdp.experiments.noise_samples import NoiseSamples, noise_samples
from approxdp.experiments.table1 import TABLE_I, PublishedUse, Table1Row, recompute_table1
from approxdp.experiments.table2 import PropertyCheck, check_table2
from approxdp.experiments.utility import UtilityCurves

__all__ = [
    "FIGURE_METHODS",
    "LABELS",
    "PUBLISHED_G",
    "TABLE_I",
    "AveragingAttack",
    "CompositionCurves",
    "DPSGDCurves",
    "FailureRegion",
    "MaxErrorResult",
    "NoiseSamples",
    "PrivacyProfiles",
    "PropertyCheck",
    "PublishedUse",
    "SigmaCurves",
    "Table1Row",
    "ThresholdRow",
    "UtilityCurves",
    "adult_histogram",
    "adult_histogram_counts",
    "averaging_attack",
    "check_table2",
    "composition_curves",
    "dpsgd_curves",
    "failure_region",
    "failure_thresholds",
    "max_error_experiment",
    "mean_estimation",
    "noise_amounts",
    "noise_samples",
    "privacy_profiles",
    "recompute_table1",
    "sigma_versus_delta",
]
