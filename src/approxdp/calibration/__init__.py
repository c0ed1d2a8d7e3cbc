"""Calibration: (ε, δ, Δ) → the scale of the noise, for every method with its validity domain."""

from approxdp.calibration.comparison import MethodVerdict, exact_verdict, method_verdicts
from approxdp.calibration.discrete_gaussian import (
    calibrate_discrete_gaussian,
    discrete_gaussian_satisfies,
)
from approxdp.calibration.gaussian import calibrate_gaussian, get_method, scale_sigma
from approxdp.calibration.methods import CALIBRATION_METHODS, CalibrationMethod
from approxdp.calibration.thresholds import classical_failure_threshold

__all__ = [
    "CALIBRATION_METHODS",
    "CalibrationMethod",
    "MethodVerdict",
    "calibrate_discrete_gaussian",
    "calibrate_gaussian",
    "classical_failure_threshold",
    "discrete_gaussian_satisfies",
    "exact_verdict",
    "get_method",
    "method_verdicts",
    "scale_sigma",
]
