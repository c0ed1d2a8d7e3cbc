"""Paper Fig. 4: private mean estimation on synthetic data (Zhao et al. §VIII-A).

n = 1000 points in R^d: x₀ ~ N(0, I_d), xᵢ = x₀ + ξᵢ with ξᵢ uniform on [−1/2, 1/2]^d. The
query is the mean; under replace-one neighbours its ℓ2-sensitivity is √d/n (every coordinate
of a point moves by at most 1). Each mechanism adds N(0, σ² I_d) with σ from its calibration
and we report the ℓ2 error ‖Q̃(x) − Q(x)‖₂, averaged over repetitions (a fresh data set each
time). Panels: (a) δ = 1e-4, ε ∈ (0, 1]; (b) ε = 0.1, δ varying; (c) ε = 0.1, δ = 1e-4,
d varying. The paper does not say which d panels (a) and (b) use; we take d = 10.

Every method sees the same seeded noise stream (common random numbers: the mechanisms'
simulation path draws σ·Z from the same Z), so the curves differ by σ alone, not by luck.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import special

from approxdp._validation import check_parameter
from approxdp.errors import InvalidParameterError, NotPrivateError
from approxdp.experiments.methods import FIGURE_METHODS, check_methods
from approxdp.experiments.sampling import check_reps
from approxdp.experiments.utility import UtilityCurves
from approxdp.mechanisms import GaussianMechanism

__all__ = ["DEFAULT_VALUES", "expected_l2_norm", "mean_estimation"]

FloatArray = npt.NDArray[np.float64]
Parameter = Literal["epsilon", "delta", "d"]

#: Default x-axis of each panel.
DEFAULT_VALUES: dict[str, FloatArray] = {
    "epsilon": np.round(np.linspace(0.1, 1.0, 10), 10),
    "delta": np.logspace(-10, -2, 9),
    "d": np.array([1, 2, 5, 10, 20, 50, 100, 200, 500, 1000], dtype=np.float64),
}
_PANEL = {"epsilon": "Fig. 4(a)", "delta": "Fig. 4(b)", "d": "Fig. 4(c)"}


def expected_l2_norm(d: int) -> float:
    """E‖Z‖₂ for Z ~ N(0, I_d): √2 Γ((d + 1)/2) / Γ(d/2)."""
    return math.sqrt(2.0) * math.exp(special.gammaln((d + 1) / 2.0) - special.gammaln(d / 2.0))


def _dataset_means(d: int, n: int, reps: int, rng: np.random.Generator) -> FloatArray:
    """True means Q(x) of ``reps`` fresh data sets, shape (reps, d)."""
    out = np.empty((reps, d))
    for r in range(reps):
        x0 = rng.standard_normal(d)
        out[r] = (x0 + rng.uniform(-0.5, 0.5, size=(n, d))).mean(axis=0)
    return out


def mean_estimation(
    parameter: Parameter = "epsilon",
    values: npt.ArrayLike | None = None,
    *,
    epsilon: float = 0.1,
    delta: float = 1e-4,
    d: int = 10,
    n: int = 1000,
    reps: int = 100,
    methods: tuple[str, ...] = FIGURE_METHODS,
    seed: int = 0,
) -> UtilityCurves:
    """ℓ2 error of private mean estimation for each calibration (Zhao et al. Fig. 4).

    Args:
        parameter: which parameter varies: ``"epsilon"`` (Fig. 4a), ``"delta"`` (4b) or
            ``"d"`` (4c).
        values: its values (default: ε ∈ {0.1, …, 1}; δ ∈ 1e-10 … 1e-2; d ∈ 1 … 1000).
        epsilon: the fixed ε when another parameter varies (paper: 0.1).
        delta: the fixed δ when another parameter varies (paper: 1e-4).
        d: the fixed dimension when another parameter varies (10: our choice).
        n: points per data set (paper: 1000).
        reps: data sets (and releases) per point.
        methods: calibration methods.
        seed: seed of data and noise.
    """
    if parameter not in _PANEL:
        raise InvalidParameterError(
            f"parameter must be 'epsilon', 'delta' or 'd', got parameter={parameter!r}"
        )
    vals = np.asarray(DEFAULT_VALUES[parameter] if values is None else values, dtype=np.float64)
    vals = np.atleast_1d(vals)
    methods = check_methods(methods)
    reps = check_reps(reps)
    n = check_reps(n, "n")
    base = {
        "epsilon": float(check_parameter("epsilon", epsilon, "epsilon_figure")),
        "delta": float(check_parameter("delta", delta)),
        "d": float(check_reps(d, "d")),
    }
    if parameter == "epsilon":
        check_parameter("values", vals, "epsilon_figure")
    elif parameter == "delta":
        check_parameter("values", vals, "delta")
    elif not np.all((vals >= 1) & (vals == np.round(vals))):
        raise InvalidParameterError(f"d values must be integers >= 1, got values={vals!r}")

    def point(i: int) -> tuple[float, float, int]:
        p = dict(base, **{parameter: float(vals[i])})
        return p["epsilon"], p["delta"], int(p["d"])

    fixed = {k: v for k, v in base.items() if k != parameter}
    fixed["n"] = float(n)
    return _run(_PANEL[parameter], parameter, vals, methods, point, n, reps, seed, fixed)


def _run(
    figure: str, parameter: str, vals: FloatArray, methods: tuple[str, ...],
    point: Callable[[int], tuple[float, float, int]], n: int, reps: int, seed: int,
    fixed: dict[str, float],
) -> UtilityCurves:
    shape = (len(methods), vals.size)
    error, stderr, expected, sigma = (np.full(shape, np.nan) for _ in range(4))
    for i in range(vals.size):
        eps, dlt, dim = point(i)
        truth = _dataset_means(dim, n, reps, np.random.default_rng([seed, 0, i]))
        sens = math.sqrt(dim) / n
        for j, m in enumerate(methods):
            try:
                mech = GaussianMechanism(eps, dlt, sens, method=m)
            except NotPrivateError:
                continue  # not (ε, δ)-DP here: no point on the curve
            rng = np.random.default_rng([seed, 1, i])  # same stream for every method
            errs = np.array(
                [np.linalg.norm(np.asarray(mech.release(t, rng=rng)) - t) for t in truth]
            )
            error[j, i] = errs.mean()
            stderr[j, i] = errs.std(ddof=1) / math.sqrt(reps) if reps > 1 else math.nan
            sigma[j, i] = mech.sigma
            expected[j, i] = mech.sigma * expected_l2_norm(dim)
    return UtilityCurves(figure, parameter, vals, methods, "l2 error", error, stderr, expected,
                         sigma, fixed, reps)
