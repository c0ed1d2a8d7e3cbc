"""``reproduce``: regenerate the results of Zhao et al. 2019 (https://arxiv.org/abs/1911.12060)
— every figure, Table I/II, G(δ) — and of the lecture notes (Near & Abuah, Wu's notes) into a
folder.

The output folder gets one PNG per figure, ``report.md`` with every table and number, and
``report.html`` (the same content, converted by :mod:`approxdp.reproduction.html`). Everything
is computed at run time from the library; the paper's published values appear only beside
our results, for comparison. Simulations are seeded, so a rerun gives the same numbers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from approxdp import plots
from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.experiments.adult_histogram import adult_histogram
from approxdp.experiments.composition import averaging_attack, composition_curves
from approxdp.experiments.failures import (
    CLASSICAL,
    FailureRegion,
    failure_region,
    failure_thresholds,
)
from approxdp.experiments.max_error import max_error_experiment
from approxdp.experiments.mean_estimation import mean_estimation
from approxdp.experiments.noise_curves import privacy_profiles, sigma_versus_delta
from approxdp.experiments.noise_samples import noise_samples
from approxdp.experiments.settings import FULL, QUICK
from approxdp.experiments.table1 import recompute_table1
from approxdp.experiments.table2 import check_table2
from approxdp.reproduction.html import markdown_to_html
from approxdp.reproduction.report import render_report
from approxdp.reproduction.results import Progress, Reproduction

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["reproduce"]

def _out_dir(out_dir: Any) -> Path:
    if not isinstance(out_dir, (str, Path)):
        raise ParameterTypeError(f"out_dir must be a path, got {out_dir!r}")
    path = Path(out_dir)
    if path.exists() and not path.is_dir():
        raise InvalidParameterError(f"out_dir must be a folder, got the file {str(path)!r}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidParameterError(f"cannot create out_dir={str(path)!r}: {exc}") from exc
    return path


def reproduce(
    out_dir: str | Path,
    quick: bool = False,
    progress: Progress | None = None,
    *,
    seed: int = 0,
) -> Reproduction:
    """Regenerate the paper's results into ``out_dir``: figures, ``report.md``, ``report.html``.

    Args:
        out_dir: folder to write into (created if missing; files in it are overwritten).
        quick: tiny grids and few repetitions (seconds; for tests) instead of the full run
            (a few minutes on two cores).
        progress: called as ``progress(description, done, total)`` before each step and once
            at the end.
        seed: seed of every simulation.

    Returns:
        A :class:`Reproduction` with every computed result and the files written.
    """
    if not isinstance(quick, bool):
        raise ParameterTypeError(f"quick must be True or False, got {quick!r}")
    if progress is not None and not callable(progress):
        raise ParameterTypeError(
            f"progress must be a callable (description, done, total), got {progress!r}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InvalidParameterError(f"seed must be an integer >= 0, got seed={seed!r}")
    start = time.perf_counter()
    settings = QUICK if quick else FULL
    out = _out_dir(out_dir)
    res = Reproduction(out, settings)
    s = settings

    def save(fig: Figure, name: str) -> None:
        if quick:  # the layout engine doubles the drawing time; quick output is for tests
            fig.set_layout_engine("none")
        res.files.append(plots.save_figure(fig, out / name, dpi=s.dpi))

    def regions(notion: str) -> tuple[FailureRegion, ...]:
        found = []
        for m in CLASSICAL:
            reg = failure_region(m, notion, resolution=s.region_resolution,  # type: ignore[arg-type]
                                 curve_points=s.region_curve_points)
            res.regions[(m, notion)] = reg
            found.append(reg)
        return tuple(found)

    def step_fig4() -> None:
        vals = s.mean_values or {}
        res.mean_estimation = tuple(
            mean_estimation(p, vals.get(p), seed=seed,
                            reps=s.mean_reps_dimension if p == "d" else s.mean_reps)
            for p in ("epsilon", "delta", "d")
        )
        save(plots.plot_mean_estimation(res.mean_estimation), "fig4_mean_estimation.png")

    def step_fig5() -> None:
        vals = s.adult_values or {}
        res.histogram = tuple(
            adult_histogram(p, vals.get(p), reps=s.adult_reps, seed=seed)
            for p in ("epsilon", "delta")
        )
        save(plots.plot_adult_histogram(res.histogram), "fig5_adult_histogram.png")

    def step_tables() -> None:
        res.table1 = recompute_table1()
        res.table2 = check_table2(quick=s.table2_quick)
        res.thresholds = failure_thresholds()

    def step_fig2() -> None:
        res.sigma_curves = sigma_versus_delta(points=s.fig2_points)
        save(plots.plot_sigma_versus_delta(res.sigma_curves), "fig2_sigma_vs_delta.png")

    def step_profiles() -> None:
        res.profiles = privacy_profiles()
        save(plots.plot_privacy_profiles(res.profiles), "privacy_profiles.png")

    def step_noise() -> None:
        res.noise = noise_samples(size=s.noise_size, seed=seed)
        save(plots.plot_noise_histograms(res.noise), "laplace_vs_gaussian_noise.png")

    def step_composition() -> None:
        res.composition = composition_curves(k_max=s.composition_k_max)
        # Near & Abuah's code has delta = 10e-5 = 1e-4: their "about 70"
        res.composition_notes = composition_curves(delta=1e-4, ks=range(1, 201))
        save(plots.plot_composition(res.composition), "composition.png")

    def step_max_error() -> None:
        res.max_error = max_error_experiment(ks=s.max_error_ks, reps=s.max_error_reps,
                                             seed=seed)
        save(plots.plot_max_error(res.max_error), "max_error_k_queries.png")

    def step_attack() -> None:
        res.attack = averaging_attack(ks=s.attack_ks, reps=s.attack_reps, seed=seed)
        save(plots.plot_averaging_attack(res.attack), "averaging_attack.png")

    steps: list[tuple[str, Callable[[], None]]] = [
        ("Table I, Table II, G(delta)", step_tables),
        ("Fig. 1: DP failure regions",
         lambda: save(plots.plot_failure_regions("dp", regions("dp")),
                      "fig1_dp_failure_regions.png")),
        ("Fig. 2: sigma versus delta", step_fig2),
        ("Fig. 3: pDP failure regions",
         lambda: save(plots.plot_failure_regions("pdp", regions("pdp")),
                      "fig3_pdp_failure_regions.png")),
        ("Fig. 4: mean estimation", step_fig4),
        ("Fig. 5: Adult histogram", step_fig5),
        ("privacy profiles", step_profiles),
        ("Laplace vs Gaussian noise", step_noise),
        ("composition", step_composition),
        ("max error of k queries", step_max_error),
        ("averaging attack", step_attack),
        ("report", lambda: None),
    ]
    total = len(steps)
    for i, (text, run) in enumerate(steps):
        if progress is not None:
            progress(text, i, total)
        run()
    res.seconds = time.perf_counter() - start
    markdown = render_report(res)
    (out / "report.md").write_text(markdown, encoding="utf-8")
    (out / "report.html").write_text(
        markdown_to_html(markdown, title="approxdp: reproduction of Zhao et al."),
        encoding="utf-8",
    )
    res.files += [out / "report.md", out / "report.html"]
    if progress is not None:
        progress("done", total, total)
    return res
