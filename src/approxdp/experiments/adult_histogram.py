"""Paper Fig. 5: a private histogram of the Adult data (Zhao et al. §VIII-B).

The 45,222 complete records, counted over the combination of all categorical attributes
(:data:`approxdp.data.ADULT_CATEGORICAL`); add/remove neighbours, so the count vector has
ℓ2-sensitivity 1. Each mechanism adds N(0, σ²) to every cell; we report the mean squared error
over the cells, averaged over repetitions. Panels: (a) δ = 1e-6, ε ∈ [0.1, 1]; (b) ε = 0.1,
δ ∈ [1e-9, 1e-5].

Which cells are released: the paper does not say; we release the combinations that occur in
the data (11,300 of the 54 million in the cross product). The per-cell noise does not depend on
the data, so the expected MSE is σ² whatever the released domain; a deployed release would fix
its domain in advance or select cells privately (:meth:`approxdp.releases.PrivateTable.histogram`).
Every method sees the same seeded noise stream (common random numbers).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

import numpy as np
import numpy.typing as npt

from approxdp._validation import check_parameter
from approxdp.data import ADULT_CATEGORICAL, load_adult
from approxdp.errors import InvalidParameterError, NotPrivateError
from approxdp.experiments.methods import FIGURE_METHODS, check_methods
from approxdp.experiments.sampling import check_reps
from approxdp.experiments.utility import UtilityCurves
from approxdp.mechanisms import GaussianMechanism

__all__ = ["DEFAULT_VALUES", "adult_histogram", "adult_histogram_counts"]

FloatArray = npt.NDArray[np.float64]

DEFAULT_VALUES: dict[str, FloatArray] = {
    "epsilon": np.round(np.linspace(0.1, 1.0, 10), 10),
    "delta": np.logspace(-9, -5, 9),
}
_PANEL = {"epsilon": "Fig. 5(a)", "delta": "Fig. 5(b)"}


@lru_cache(maxsize=1)
def _counts() -> tuple[FloatArray, int]:
    table = load_adult()
    grouped = table.group_by(list(ADULT_CATEGORICAL)).aggregate([([], "count_all")])
    counts = np.asarray(grouped.column("count_all").to_numpy(), dtype=np.float64)
    counts.setflags(write=False)
    return counts, int(table.num_rows)


def adult_histogram_counts() -> tuple[FloatArray, int]:
    """The true counts of the non-empty cells and the number of records (45,222)."""
    return _counts()


def adult_histogram(
    parameter: Literal["epsilon", "delta"] = "epsilon",
    values: npt.ArrayLike | None = None,
    *,
    epsilon: float = 0.1,
    delta: float = 1e-6,
    reps: int = 20,
    methods: tuple[str, ...] = FIGURE_METHODS,
    seed: int = 0,
) -> UtilityCurves:
    """MSE of the private Adult histogram for each calibration (Zhao et al. Fig. 5).

    Args:
        parameter: ``"epsilon"`` (Fig. 5a, δ fixed) or ``"delta"`` (Fig. 5b, ε fixed).
        values: its values (default ε ∈ {0.1, …, 1}; δ ∈ 1e-9 … 1e-5).
        epsilon: the fixed ε when δ varies (paper: 0.1, Fig. 5b).
        delta: the fixed δ when ε varies (paper: 1e-6, Fig. 5a).
        reps: noisy histograms per point.
        methods: calibration methods.
        seed: noise seed.
    """
    if parameter not in _PANEL:
        raise InvalidParameterError(
            f"parameter must be 'epsilon' or 'delta', got parameter={parameter!r}"
        )
    vals = np.atleast_1d(np.asarray(
        DEFAULT_VALUES[parameter] if values is None else values, dtype=np.float64))
    if parameter == "epsilon":
        check_parameter("values", vals, "epsilon_figure")
    else:
        check_parameter("values", vals, "delta")
    eps0 = float(check_parameter("epsilon", epsilon, "epsilon_figure"))
    d0 = float(check_parameter("delta", delta))
    methods = check_methods(methods)
    reps = check_reps(reps)
    counts, records = _counts()
    shape = (len(methods), vals.size)
    error, stderr, expected, sigma = (np.full(shape, np.nan) for _ in range(4))
    for i, v in enumerate(vals):
        eps, dlt = (float(v), d0) if parameter == "epsilon" else (eps0, float(v))
        for j, m in enumerate(methods):
            try:
                mech = GaussianMechanism(eps, dlt, 1.0, method=m)
            except NotPrivateError:
                continue
            rng = np.random.default_rng([seed, i])  # same stream for every method
            mse = np.array([
                float(np.mean((np.asarray(mech.release(counts, rng=rng)) - counts) ** 2))
                for _ in range(reps)
            ])
            error[j, i] = mse.mean()
            stderr[j, i] = mse.std(ddof=1) / np.sqrt(reps) if reps > 1 else np.nan
            sigma[j, i] = mech.sigma
            expected[j, i] = mech.sigma**2
    fixed = {"delta": d0} if parameter == "epsilon" else {"epsilon": eps0}
    fixed.update(cells=float(counts.size), records=float(records))
    return UtilityCurves(_PANEL[parameter], parameter, vals, methods, "MSE", error, stderr,
                         expected, sigma, fixed, reps)
