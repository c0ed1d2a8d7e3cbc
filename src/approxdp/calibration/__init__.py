"""Calibration: (ε, δ, Δ) → the scale of the noise, for every method with its validity domain."""

from approxdp.calibration.gaussian import calibrate_gaussian, get_method
from approxdp.calibration.methods import CALIBRATION_METHODS, CalibrationMethod
from approxdp.calibration.thresholds import classical_failure_threshold

__all__ = [
    "CALIBRATION_METHODS",
    "CalibrationMethod",
    "calibrate_gaussian",
    "classical_failure_threshold",
    "get_method",
]
