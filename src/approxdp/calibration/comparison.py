"""Every calibration method at one (ε, δ, Δ): the σ it gives — also where it is not private —
and the exact verdict on it. ``approxdp calibrate`` prints this comparison, the browser's
Calibrate page shows it, every release carries it
(:attr:`ReleaseResult.comparisons <approxdp.releases.result.ReleaseResult.comparisons>`), and
the paper's figures draw it over grids (:func:`exact_verdict`).

The verdict is the exact privacy profile of the σ, in log space: δ_DP(ε; σ, Δ) (Zhao et al.
2019, Thm 2) or, for ``notion="pdp"``, P[|L| > ε] (Thm 6), compared with δ — no tolerance.

>>> rows = {v.method: v for v in method_verdicts(10.0, 1e-5)}
>>> rows["optimal"].private, rows["dwork-roth-2014"].private
(True, False)
>>> round(rows["dwork-roth-2014"].fails_above_epsilon, 2)
8.42
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from approxdp.calibration.gaussian import calibrate_gaussian, scale_sigma
from approxdp.calibration.methods import CALIBRATION_METHODS
from approxdp.calibration.thresholds import classical_failure_threshold
from approxdp.errors import ApproxDPError, NotPrivateWarning
from approxdp.profiles import gaussian_log_delta, gaussian_log_pdp_delta

__all__ = ["MethodVerdict", "exact_verdict", "method_verdicts"]

Notion = Literal["dp", "pdp"]


@dataclass(frozen=True, slots=True)
class MethodVerdict:
    """What one calibration method gives at (ε, δ, Δ), and whether it is private there.

    Attributes:
        method: the method's name (:data:`~approxdp.calibration.CALIBRATION_METHODS`).
        sigma: its σ (calibrated even where it is not private), or None where the method is
            not defined at (ε, δ) (``reason`` says why).
        log_true_delta: ln of the exact profile of that σ at ε (−inf: nothing to hide).
        private: whether the profile is at most δ (None where undefined).
        fails_above_epsilon: for a classical formula, the ε above which it is not private at
            this δ (:func:`~approxdp.calibration.classical_failure_threshold`); else None.
        reason: why the method is not defined here (its error message), else None.
    """

    method: str
    sigma: float | None
    log_true_delta: float | None
    private: bool | None
    fails_above_epsilon: float | None = None
    reason: str | None = None

    @property
    def true_delta(self) -> float | None:
        """The exact profile of σ at ε (None where undefined)."""
        return None if self.log_true_delta is None else math.exp(self.log_true_delta)


@functools.lru_cache(maxsize=512)
def _unit_sigma(epsilon: float, delta: float, method: str) -> float | str:
    """σ of ``method`` at (ε, δ) for Δ = 1 — even where it is not private — or, where the
    method is not defined, the reason."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotPrivateWarning)
            return float(
                calibrate_gaussian(epsilon, delta, 1.0, method=method, allow_non_private=True)
            )
    except ApproxDPError as exc:
        return str(exc)


def exact_verdict(
    epsilon: npt.ArrayLike, delta: npt.ArrayLike, sigma: npt.ArrayLike,
    sensitivity: float = 1.0, notion: Notion = "dp",
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """(ln of the exact profile, whether it is ≤ δ) of Gaussian noise σ at ε, elementwise.

    Δ = 0 or σ = ∞ hides nothing: ln δ = −inf, private. NaN σ (undefined) is not private.
    """
    eps, dlt, sig = np.broadcast_arrays(np.asarray(epsilon, dtype=np.float64),
                                        np.asarray(delta, dtype=np.float64),
                                        np.asarray(sigma, dtype=np.float64))
    log_true = np.full(eps.shape, -np.inf)
    known = ~np.isnan(sig)
    noisy = known & np.isfinite(sig) & (sensitivity != 0)
    if np.any(noisy):
        log_true[noisy] = _log_profile(eps[noisy], sig[noisy], sensitivity, notion)
    log_true[~known] = np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        private = known & (log_true <= np.log(dlt))
    return log_true, private


def _log_profile(epsilon: npt.ArrayLike, sigma: npt.ArrayLike, sensitivity: float,
                 notion: Notion) -> npt.NDArray[np.float64] | float:
    profile = gaussian_log_delta if notion == "dp" else gaussian_log_pdp_delta
    return profile(epsilon, sigma, sensitivity)


def _verdict(epsilon: float, delta: float, sigma: float, sensitivity: float,
             notion: Notion) -> tuple[float, bool]:
    """:func:`exact_verdict` of one point (the profile's scalar path)."""
    if sensitivity == 0 or math.isinf(sigma):
        log_true = -math.inf  # nothing to hide: exactly private
    else:
        log_true = float(_log_profile(epsilon, sigma, sensitivity, notion))
    return log_true, log_true <= math.log(delta)


def method_verdicts(
    epsilon: float, delta: float, sensitivity: float = 1.0,
    methods: Sequence[str] = tuple(CALIBRATION_METHODS), *, notion: Notion = "dp",
    known: Mapping[str, float] | None = None,
) -> tuple[MethodVerdict, ...]:
    """Each of ``methods`` at (ε, δ, Δ): its σ and the exact verdict (module docstring).

    σ at Δ is the σ at Δ = 1 (calibrated once per (ε, δ), cached) scaled by
    :func:`~approxdp.calibration.scale_sigma`, bit for bit what
    :func:`~approxdp.calibration.calibrate_gaussian` returns at Δ. ``known`` gives σ already
    calibrated for some methods (a release's own), used as they are.
    """
    out = []
    for name in methods:
        given = (known or {}).get(name)
        unit = _unit_sigma(float(epsilon), float(delta), name) if given is None else None
        if isinstance(unit, str):
            out.append(MethodVerdict(name, None, None, None, reason=unit))
            continue
        sigma = given if given is not None else scale_sigma(float(unit or 0.0), sensitivity)
        log_true, private = _verdict(epsilon, delta, sigma, sensitivity, notion)
        fails = None
        if not CALIBRATION_METHODS[name].always_private:
            fails = float(classical_failure_threshold(delta, name, notion))
        out.append(MethodVerdict(name, sigma, log_true, private, fails))
    return tuple(out)
