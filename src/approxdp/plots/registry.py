"""Every plot by name, with the options it takes — what ``approxdp plot NAME`` draws."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from approxdp._validation import check_parameter
from approxdp.errors import InvalidParameterError, UnknownMethodError
from approxdp.plots.calibration import (
    plot_failure_regions,
    plot_privacy_profiles,
    plot_sigma_versus_delta,
)
from approxdp.plots.composition import plot_averaging_attack, plot_composition
from approxdp.plots.dpsgd import plot_dpsgd
from approxdp.plots.noise import plot_max_error, plot_noise_histograms
from approxdp.plots.utility import plot_adult_histogram, plot_mean_estimation

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["PLOTS", "PlotSpec", "option_flag", "render_plot"]

#: Options a plot may take (the CLI's flags).
OPTIONS = ("epsilon", "delta", "sigma", "sample_rate", "steps", "seed", "quick")


def option_flag(option: str) -> str:
    """The command-line flag of a plot option: ``sample_rate`` → ``--sample-rate``."""
    return "--" + option.replace("_", "-")


@dataclass(frozen=True, slots=True)
class PlotSpec:
    """A named plot.

    Attributes:
        name: the name ``approxdp plot`` takes.
        title: what it shows and which figure of the paper (or seed) it reproduces.
        options: which of ``epsilon``, ``delta``, ``sigma``, ``seed``, ``quick`` it takes.
        draw: builds the figure from those options.
    """

    name: str
    title: str
    options: tuple[str, ...]
    draw: Callable[..., Figure]


def _reps(quick: bool, full: int, fast: int) -> int:
    return fast if quick else full


def _fig2(epsilon: float | None = None, **_: Any) -> Figure:
    if epsilon is None:
        return plot_sigma_versus_delta()
    return plot_sigma_versus_delta(epsilons=(epsilon,))


def _dpsgd(
    sigma: tuple[float, ...] | None = None, delta: float = 1e-5,
    sample_rate: float = 256 / 60000, steps: int = 14063, quick: bool = False, **_: Any
) -> Figure:
    return plot_dpsgd(
        noise_multiplier=tuple(sigma) if sigma else 1.1, sample_rate=sample_rate,
        max_steps=steps, delta=delta, points=8 if quick else 24,
    )


PLOTS: dict[str, PlotSpec] = {
    p.name: p
    for p in (
        PlotSpec("fig1", "Zhao et al. Fig. 1: (eps, delta) where Dwork-2014/2006 are not DP",
                 ("quick",),
                 lambda quick=False, **_: plot_failure_regions(
                     "dp", resolution=60 if quick else 160)),
        PlotSpec("fig2", "Zhao et al. Fig. 2: sigma versus delta for every mechanism (one panel "
                 "per eps; --epsilon draws one)", ("epsilon",), _fig2),
        PlotSpec("fig3", "Zhao et al. Fig. 3: (eps, delta) where Dwork-2014/2006 are not pDP",
                 ("quick",),
                 lambda quick=False, **_: plot_failure_regions(
                     "pdp", resolution=60 if quick else 160)),
        PlotSpec("fig4", "Zhao et al. Fig. 4: error of private mean estimation", ("seed", "quick"),
                 lambda seed=0, quick=False, **_: plot_mean_estimation(
                     reps=_reps(quick, 100, 4), seed=seed)),
        PlotSpec("fig5", "Zhao et al. Fig. 5: MSE of the private Adult histogram",
                 ("seed", "quick"),
                 lambda seed=0, quick=False, **_: plot_adult_histogram(
                     reps=_reps(quick, 20, 2), seed=seed)),
        PlotSpec("profiles", "exact privacy profiles delta(eps) for given sigmas (--sigma)",
                 ("sigma",),
                 lambda sigma=None, **_: plot_privacy_profiles(
                     sigmas=tuple(sigma) if sigma else (0.5, 1.0, 2.0, 4.0))),
        PlotSpec("noise", "Laplace vs Gaussian noise histograms (the notes)",
                 ("epsilon", "delta", "seed"),
                 lambda epsilon=1.0, delta=1e-5, seed=0, **_: plot_noise_histograms(
                     epsilon=epsilon, delta=delta, seed=seed)),
        PlotSpec("composition", "basic vs advanced vs optimal vs exact-Gaussian composition "
                 "(the notes)", ("epsilon", "delta"),
                 lambda epsilon=1.0, delta=1e-5, **_: plot_composition(
                     epsilon=epsilon, delta=delta)),
        PlotSpec("max-error", "max error of k counting queries, Laplace vs Gaussian "
                 "(Wu's notes, Eq. 36-37)", ("epsilon", "delta", "seed", "quick"),
                 lambda epsilon=1.0, delta=1e-5, seed=0, quick=False, **_: plot_max_error(
                     epsilon=epsilon, delta=delta, reps=_reps(quick, 200, 10), seed=seed)),
        PlotSpec("averaging-attack", "the notes' averaging attack and its privacy cost",
                 ("epsilon", "delta", "seed", "quick"),
                 lambda epsilon=1.0, delta=1e-5, seed=0, quick=False, **_:
                 plot_averaging_attack(epsilon=epsilon, delta=delta,
                                       reps=_reps(quick, 400, 20), seed=seed)),
        PlotSpec("dpsgd", "DP-SGD: epsilon against steps under every accountant (PLD, RDP, "
                 "GDP-CLT, amplify+compose); --sigma is the noise multiplier (several: PLD "
                 "and RDP for each), --sample-rate q, --steps the last T (default MNIST: "
                 "q = 256/60000, T = 14063)",
                 ("sigma", "delta", "sample_rate", "steps", "quick"), _dpsgd),
    )
}


def render_plot(name: str, **options: Any) -> Figure:
    """Draw the plot called ``name`` with the given options (None values are ignored).

    Raises:
        UnknownMethodError: ``name`` is not in :data:`PLOTS`.
        InvalidParameterError: an option the plot does not take, or out of range.
    """
    if name not in PLOTS:
        raise UnknownMethodError(f"unknown plot {name!r}; choose one of {', '.join(PLOTS)}")
    spec = PLOTS[name]
    given = {k: v for k, v in options.items() if v is not None and v != () and v is not False}
    unknown = sorted(set(given) - set(spec.options))
    if unknown:
        takes = ", ".join(option_flag(o) for o in spec.options) or "no options"
        raise InvalidParameterError(
            f"plot {name!r} does not take {', '.join(option_flag(u) for u in unknown)}; "
            f"it takes {takes}"
        )
    if "epsilon" in given:
        check_parameter("epsilon", given["epsilon"], "epsilon_figure")
    if "delta" in given:
        check_parameter("delta", given["delta"])
    if "sigma" in given:
        check_parameter("sigma", list(given["sigma"]), "sigma_figure")
    if "sample_rate" in given:
        check_parameter("sample_rate", given["sample_rate"])
    if "steps" in given:
        steps = given["steps"]
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= 10**9:
            raise InvalidParameterError(
                f"steps must be an integer in [1, 1e9], got steps={steps!r}")
    return spec.draw(**given)
