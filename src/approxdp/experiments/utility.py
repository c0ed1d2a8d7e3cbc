"""The result of a utility experiment (Zhao et al. Fig. 4 and 5): error per method and parameter."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = ["UtilityCurves"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True, eq=False)
class UtilityCurves:
    """Measured error of each Gaussian calibration as one parameter varies.

    Attributes:
        figure: which panel of the paper this reproduces, e.g. ``"Fig. 4(a)"``.
        parameter: the varied parameter: ``"epsilon"``, ``"delta"`` or ``"d"``.
        values: its values.
        methods: calibration methods (library names).
        metric: ``"l2 error"`` (mean estimation) or ``"MSE"`` (histogram).
        error: mean of the metric over the repetitions, shape (len(methods), len(values));
            NaN where the method is not (ε, δ)-DP (it is then not run).
        stderr: standard error of that mean, same shape.
        expected: the metric's exact expectation for the calibrated σ, same shape.
        sigma: the calibrated σ, same shape.
        fixed: the parameters held fixed (names to values).
        reps: repetitions per point.
    """

    figure: str
    parameter: str
    values: FloatArray
    methods: tuple[str, ...]
    metric: str
    error: FloatArray
    stderr: FloatArray
    expected: FloatArray
    sigma: FloatArray
    fixed: dict[str, float] = field(default_factory=dict)
    reps: int = 1

    def ratio_to(self, method: str = "optimal") -> FloatArray:
        """Each method's error divided by ``method``'s, shape (len(methods), len(values))."""
        out: FloatArray = self.error / self.error[self.methods.index(method)]
        return out
