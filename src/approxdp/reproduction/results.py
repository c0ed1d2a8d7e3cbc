"""What one run of :func:`~approxdp.reproduction.reproduce` computes and writes: the
:class:`Reproduction` record (read by the report), the figure files and the progress callback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from approxdp.experiments.composition import AveragingAttack, CompositionCurves
from approxdp.experiments.failures import FailureRegion, ThresholdRow
from approxdp.experiments.max_error import MaxErrorResult
from approxdp.experiments.noise_curves import PrivacyProfiles, SigmaCurves
from approxdp.experiments.noise_samples import NoiseSamples
from approxdp.experiments.settings import Settings
from approxdp.experiments.table1 import Table1Row
from approxdp.experiments.table2 import PropertyCheck
from approxdp.experiments.utility import UtilityCurves

__all__ = ["FIGURE_FILES", "Progress", "Reproduction"]

#: Progress callback: (what is being done, steps done, total steps).
Progress = Callable[[str, int, int], None]

#: The figure files ``reproduce`` writes, and what each shows.
FIGURE_FILES: dict[str, str] = {
    "fig1_dp_failure_regions.png": "Fig. 1: where Dwork-2014/2006 are not (eps, delta)-DP",
    "fig2_sigma_vs_delta.png": "Fig. 2: sigma versus delta for every mechanism",
    "fig3_pdp_failure_regions.png": "Fig. 3: where Dwork-2014/2006 are not (eps, delta)-pDP",
    "fig4_mean_estimation.png": "Fig. 4: mean estimation",
    "fig5_adult_histogram.png": "Fig. 5: Adult histogram",
    "privacy_profiles.png": "exact privacy profiles delta(eps)",
    "laplace_vs_gaussian_noise.png": "Laplace vs Gaussian noise (the notes)",
    "composition.png": "composition as k grows (the notes, improved)",
    "max_error_k_queries.png": "max error of k counting queries (Wu's notes, Eq. 36-37)",
    "averaging_attack.png": "the notes' averaging attack",
}


@dataclass(eq=False)
class Reproduction:
    """Everything one run of :func:`~approxdp.reproduction.reproduce` computed, and where it
    wrote it.

    Attributes:
        out_dir: the output folder.
        settings: the grid sizes and repetitions used (full or quick).
        seconds: wall-clock time of the run.
        files: every file written.
        table1, table2, thresholds: the tables.
        regions: failure regions, keyed by (method, notion).
        sigma_curves, profiles, noise, composition, max_error, attack: the other results.
        composition_notes: composition at the delta of the notes' code (1e-4), k <= 200.
        mean_estimation, histogram: the panels of Fig. 4 and Fig. 5.
    """

    out_dir: Path
    settings: Settings
    seconds: float = 0.0
    files: list[Path] = field(default_factory=list)
    table1: list[Table1Row] = field(default_factory=list)
    table2: list[PropertyCheck] = field(default_factory=list)
    thresholds: list[ThresholdRow] = field(default_factory=list)
    regions: dict[tuple[str, str], FailureRegion] = field(default_factory=dict)
    sigma_curves: SigmaCurves | None = None
    profiles: PrivacyProfiles | None = None
    noise: NoiseSamples | None = None
    composition: CompositionCurves | None = None
    composition_notes: CompositionCurves | None = None
    max_error: MaxErrorResult | None = None
    attack: AveragingAttack | None = None
    mean_estimation: tuple[UtilityCurves, ...] = ()
    histogram: tuple[UtilityCurves, ...] = ()
