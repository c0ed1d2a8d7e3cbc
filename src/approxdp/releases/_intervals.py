"""The spread of a release's noise: each value's standard deviation and confidence interval.

One set of formulas for both places noise is added — this process
(:mod:`~approxdp.releases._driver`) and, for a large domain, the engine's workers
(:mod:`~approxdp.releases.dense`) — so a cell's std and interval do not depend on where it was
noised. Every function works on the
query's *scaled* vector (each measure divided by its scale, see
:class:`~approxdp.releases.specs.Measure`) or on matrices of shape (cells, measures).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import special

from approxdp.mechanisms.gaussian import SecureGaussianNoise

__all__ = ["mean_interval", "noise_spread", "normal_quantile"]

FloatArray = npt.NDArray[np.float64]


def normal_quantile(level: float) -> float:
    """z with P[|N(0, 1)| ≤ z] = ``level``: value ± z·σ is a two-sided interval at ``level``."""
    return -float(special.ndtri((1.0 - level) / 2.0))


def noise_spread(
    sigma: float, secure: SecureGaussianNoise | None, level: float
) -> tuple[float, float]:
    """(standard deviation, interval scale) of one scaled coordinate's noise.

    Float noise N(0, σ²): both are σ, and value ± z·σ is an exact interval. Secure noise is the
    query rounded onto the lattice gZ plus N_Z(0, s²) on it (Canonne et al. 2020): its scale is
    ``secure.sigma`` (s·g, a little above σ: the lattice calibration adds noise, never removes
    it), and the interval scale is the h/z of :meth:`SecureGaussianNoise.half_width` (which
    bounds the tail of the discrete noise and the rounding), taken at α = 1 − level and α/2
    (the mean's box uses both sides at α/2), whichever is larger, so value ± z·scale holds its
    level.
    """
    if secure is None or sigma == 0.0:
        return sigma, sigma
    alpha = 1.0 - level
    ci = max(
        secure.half_width(a) / -float(special.ndtri(a / 2.0)) for a in (alpha, alpha / 2.0)
    )
    return secure.sigma, max(ci, secure.sigma)


def mean_interval(
    bounds: tuple[float, float], noisy: FloatArray, stds: FloatArray, level: float,
    ci_stds: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """(value, std, ci_low, ci_high) per cell of a mean clamped to ``bounds`` = [L, U], from
    the noisy (Σ̃(x − c), ñ) in the two columns of ``noisy`` (c the bounds' midpoint).

    With S ∈ [Σ̃ ± z σ_S] and n ∈ [ñ ± z σ_n], each at level 1 − α/2 (z = Φ̄⁻¹(α/4)), the true
    clamped mean c + S/n lies, with probability ≥ 1 − α, between the extremes of c + S/n over
    the box's corners (S/n is monotone in each argument when n > 0); if the box reaches n ≤ 0
    the interval is the whole of [L, U]. Where ñ ≤ 0 the value is the midpoint c.
    ``ci_stds``: the interval scales of the two columns where they differ from ``stds``
    (secure noise, see :func:`noise_spread`).
    """
    low, high = bounds
    c = low / 2 + high / 2  # (low + high)/2 without overflow
    half = high / 2 - low / 2  # (high − low)/2 without overflow
    s, n = noisy[:, 0], noisy[:, 1]
    ss, sn = stds[:, 0], stds[:, 1]
    positive = n > 0
    ratio = np.divide(s, n, out=np.zeros_like(s), where=positive)
    values = np.clip(c + ratio, low, high)
    # delta method where ñ > 0; never more than (U − L)/2, the largest standard deviation of
    # a value confined to [L, U] (Popoviciu), which is also the answer where ñ ≤ 0 (no NaN)
    # hypot: no overflow of the squares where the bounds are wide (±1e200 gave std = ∞ → U − L)
    delta_method = np.hypot(ss, (values - c) * sn) / np.where(positive, n, 1.0)
    std = np.where(positive, np.minimum(delta_method, half), half)
    zb = -float(special.ndtri((1.0 - level) / 4.0))
    if ci_stds is not None:
        ss, sn = ci_stds[:, 0], ci_stds[:, 1]
    s_lo, s_hi, n_lo, n_hi = s - zb * ss, s + zb * ss, n - zb * sn, n + zb * sn
    ok = n_lo > 0
    safe_lo = np.where(ok, n_lo, 1.0)
    safe_hi = np.where(ok, n_hi, 1.0)
    corners = np.stack([s_lo / safe_lo, s_lo / safe_hi, s_hi / safe_lo, s_hi / safe_hi])
    lo = np.where(ok, np.clip(c + corners.min(axis=0), low, high), low)
    hi = np.where(ok, np.clip(c + corners.max(axis=0), low, high), high)
    return values, std, lo, hi
