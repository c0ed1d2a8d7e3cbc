"""Privacy-loss sources of the Laplace, discrete-Gaussian and (ε, δ) mechanisms, as CDFs under
P and Q with their error bounds (the Gaussian and subsampled sources are in
:mod:`approxdp.accounting.pld.privacy_loss`, which re-exports these; the protocol they follow
and the CDF record are in :mod:`approxdp.accounting.pld.loss_cdfs`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy import special

from approxdp.accounting.pld.loss_cdfs import _TINY, _U, CDFError, LossCDF

__all__ = ["DiscreteGaussianLoss", "EpsilonDeltaLoss", "LaplaceLoss"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class LaplaceLoss:
    """Lap(1, b) vs Lap(0, b) with ε₀ = 1/b: the Laplace mechanism at ε₀ = Δ/b (Dwork, Roth
    2014, https://doi.org/10.1561/0400000042, Thm 3.6). The loss is −ε₀ for x ≤ 0, ε₀(2x − 1)
    on [0, 1] and ε₀ for x ≥ 1: atoms of mass ½e^(−ε₀) and ½ at the ends under P."""

    epsilon: float

    @property
    def key(self) -> tuple[object, ...]:
        return ("laplace", self.epsilon)

    def cdfs(self, edges: FloatArray) -> LossCDF:
        e0 = self.epsilon
        inside = (edges >= -e0) & (edges < e0)
        below = edges < -e0
        t = np.where(inside, edges, 0.0)
        # inside: P(L <= e) = ½ e^((e − ε₀)/2), Q(L > e) = ½ e^(−(e + ε₀)/2)
        fp_in = 0.5 * np.exp(0.5 * (t - e0))
        sq_in = 0.5 * np.exp(-0.5 * (t + e0))
        fp = np.where(inside, fp_in, np.where(below, 0.0, 1.0))
        sp = np.where(inside, 1.0 - fp_in, np.where(below, 1.0, 0.0))
        sq = np.where(inside, sq_in, np.where(below, 1.0, 0.0))
        fq = np.where(inside, 1.0 - sq_in, np.where(below, 0.0, 1.0))
        return LossCDF(fp, sp, fq, sq)

    def cdf_error(self, edges: FloatArray) -> CDFError:
        """Per edge, the values' error bounds: inside (−ε₀, ε₀) the exponent (e ∓ ε₀)/2
        rounds by ≤ u·(|e| + ε₀)/2, which exp turns into that much relative error, exp
        itself a few ulps more (and 1 − a value ≤ ½ loses ≤ 2u of the larger side); the
        atoms' 0/1 are exact. A flat few-ulp allowance would not cover ε₀ ≳ 8."""
        e0 = self.epsilon
        inside = (edges >= -e0) & (edges < e0)
        t = np.where(inside, np.abs(edges), 0.0)
        value = np.where(inside, _U * (8.0 + t + e0) * (1.0 + 8.0 * _U), 0.0)
        return CDFError(np.asarray(value, dtype=np.float64))


@dataclass(frozen=True, slots=True)
class EpsilonDeltaLoss:
    """The dominating pair of all (ε, δ)-DP mechanisms (Kairouz, Oh, Viswanath 2017,
    https://arxiv.org/abs/1311.0776, Thm 2.1; Zhu, Dong, Wang 2022, Prop. 11).

    Under P: loss +∞ with mass δ, ε with (1−δ)e^ε/(1+e^ε), −ε with (1−δ)/(1+e^ε); Q is the
    mirror image (mass δ at loss −∞)."""

    epsilon: float
    delta: float

    @property
    def key(self) -> tuple[object, ...]:
        return ("epsilon-delta", self.epsilon, self.delta)

    def cdfs(self, edges: FloatArray) -> LossCDF:
        eps, delta = self.epsilon, self.delta
        hi = (1.0 - delta) / (1.0 + math.exp(-eps))  # P-mass at +ε
        # P-mass at −ε, written directly: (1 − δ) − hi cancels to nothing for large ε
        lo = (1.0 - delta) / (1.0 + math.exp(eps)) if eps < 710.0 else 0.0
        # Q-masses: at +ε: lo, at −ε: hi, at −∞: δ
        fp = np.where(edges < -eps, 0.0, np.where(edges < eps, lo, lo + hi))
        sp = np.where(edges < -eps, 1.0, np.where(edges < eps, hi + delta, delta))
        fq = np.where(edges < -eps, delta, np.where(edges < eps, delta + hi, 1.0))
        sq = np.where(edges < -eps, 1.0 - delta, np.where(edges < eps, lo, 0.0))
        if eps == 0.0:  # the two atoms coincide at 0
            fp = np.where(edges < 0.0, 0.0, 1.0 - delta)
            sp = np.where(edges < 0.0, 1.0, delta)
            fq = np.where(edges < 0.0, delta, 1.0)
            sq = np.where(edges < 0.0, 1.0 - delta, 0.0)
        return LossCDF(fp, sp, fq, sq)


@dataclass(frozen=True, slots=True)
class DiscreteGaussianLoss:
    """N_Z(Δ, σ²) vs N_Z(0, σ²) for an integer Δ ≥ 1 (Canonne, Kamath, Steinke 2020,
    https://arxiv.org/abs/2004.00010, Thm 7): atoms at the losses (2kΔ − Δ²)/(2σ²), k ∈ Z.

    The support is enumerated over k within 40σ + Δ of the centres (the rest, below 1e-300,
    is placed on the pessimistic side: at loss +∞ under P). The PLD accountant uses it up to
    σ = 1e4 (an 8e5-atom table) and the event's certified (ε, δ) above."""

    sigma: float
    sensitivity: int

    @property
    def key(self) -> tuple[object, ...]:
        return ("discrete-gaussian", self.sigma, self.sensitivity)

    def cdfs(self, edges: FloatArray) -> LossCDF:
        losses, cum_p, tail_p, cum_q, tail_q = _discrete_gaussian_table(
            self.sigma, self.sensitivity
        )
        idx = np.searchsorted(losses, edges, side="right")  # atoms with loss <= e
        return LossCDF(cum_p[idx], tail_p[idx] + _beyond_table(cum_p), cum_q[idx], tail_q[idx])

    def cdf_error(self, edges: FloatArray) -> CDFError:
        """The table's error bounds (flat over the edges): each weight e^(−(k − Δ)²/(2σ²) −
        log Z) errs by ≤ u·(3·|exponent| + 2) relative, log Z (a sum of N terms) by ≤ (N + 2)u
        absolute, and the sequential cumulative sums of N positive terms by ≤ N·u relative
        (Higham 2002, *Accuracy and Stability of Numerical Algorithms*, Sec. 4.2): at σ = 10⁴
        (N ≈ 8·10⁵) ~2e-10, far above a flat few ulps. The P-mass beyond the table, formed as
        1 − (a sum ≈ 1), is up to ~N·u absolute: the absolute term τ."""
        losses, cum_p, _, _, _ = _discrete_gaussian_table(self.sigma, self.sensitivity)
        n = float(losses.size)
        # the table's k run over [−half, Δ + half]: the largest exponent is at its ends
        half = (losses.size - self.sensitivity - 1) // 2
        expo = (half + self.sensitivity) ** 2 / (2.0 * self.sigma * self.sigma)
        kappa = _U * (2.0 * n + 3.0 * expo + 16.0) * (1.0 + 8.0 * _U)
        tiny = _beyond_table(cum_p) + 2.0 * n * _U + _TINY
        return CDFError(np.full(edges.shape, kappa), tiny)


def _beyond_table(cum_p: FloatArray) -> float:
    """The P-mass the discrete-Gaussian table leaves out, as 1 − its total (placed at +∞)."""
    return max(0.0, 1.0 - float(cum_p[-1]))


@lru_cache(maxsize=32)
def _discrete_gaussian_table(
    sig: float, d: int
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """Losses and both cumulative tails of the two discrete Gaussians, built once per (σ, Δ)
    (the discretization asks for the CDFs many times)."""
    half = math.ceil(40.0 * sig) + 1
    k = np.arange(-half, d + half + 1, dtype=np.float64)
    logw_q = -(k * k) / (2.0 * sig * sig)
    logw_p = -((k - d) ** 2) / (2.0 * sig * sig)
    # both normalizers are the same sum over Z (shift by an integer); use Q's
    log_z = float(special.logsumexp(logw_q))
    wp, wq = np.exp(logw_p - log_z), np.exp(logw_q - log_z)
    losses = (2.0 * k * d - d * d) / (2.0 * sig * sig)
    cum_p = np.concatenate(([0.0], np.cumsum(wp)))
    cum_q = np.concatenate(([0.0], np.cumsum(wq)))
    tail_p = np.concatenate((np.cumsum(wp[::-1])[::-1], [0.0]))
    tail_q = np.concatenate((np.cumsum(wq[::-1])[::-1], [0.0]))
    return losses, cum_p, tail_p, cum_q, tail_q
