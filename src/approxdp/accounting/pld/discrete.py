"""A discretized privacy-loss distribution on the grid i·h (:class:`DiscretePLD`): what the
PLD accountant's grids (:mod:`approxdp.accounting.pld.grid`) produce and its composer
(:mod:`approxdp.accounting.pld.compose`) consumes. Connect-the-dots: Doroshenko, Ghazi, Kamath,
Kumar, Manurangsi 2022, https://arxiv.org/abs/2207.04380.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from approxdp.accounting.pld.quiet import quiet

__all__ = ["DiscretePLD"]

FloatArray = npt.NDArray[np.float64]
#: ndarray.sum without its Python wrapper (the same reduction)
_SUM = np.add.reduce


@dataclass(frozen=True, slots=True)
class DiscretePLD:
    """A pessimistic discretization of one privacy-loss distribution.

    Attributes:
        h: grid step; the loss of ``pmf[i]`` is ``(offset + i) * h``.
        offset: grid index of ``pmf[0]``.
        pmf: P-masses at finite losses (sum 1 − infinity_mass, up to round-off).
        infinity_mass: P-mass at loss +∞ (pure δ, and the truncated upper tail).
        spread: for connect-the-dots, the variance that the split adds in each interval
            (e_k, e_(k+1)], h²·a(p − a)/p for an interval of P-mass p of which a goes up: what
            the discretization costs in ε; None otherwise.
        tilt: the masses are stored tilted by e^(tilt·loss) (see :meth:`log_masses`).
        log_norm: with ``tilt``, the log of the normalizer.
        guard: for connect-the-dots, the mean shift of the loss from moving mass up to cover
            the split's floating-point error.
    """

    h: float
    offset: int
    pmf: FloatArray
    infinity_mass: float
    spread: FloatArray | None = None
    tilt: float = 0.0
    log_norm: float = 0.0
    guard: float = 0.0

    def log_masses(self) -> FloatArray:
        """log of the true masses: ``pmf`` is stored tilted when ``tilt`` ≠ 0 (a composed
        block), the true mass being pmf · e^(log_norm − tilt·loss)."""
        with quiet():
            out = np.log(np.maximum(self.pmf, 0.0))
        if self.tilt != 0.0 or self.log_norm != 0.0:
            out = out + (self.log_norm - self.tilt * self.losses)
        return np.asarray(out)

    @property
    def losses(self) -> FloatArray:
        """The loss of each entry of ``pmf``."""
        return np.asarray((self.offset + np.arange(self.pmf.size)) * self.h, dtype=np.float64)

    def delta(self, epsilon: float) -> float:
        """δ(ε) of this (single-step) distribution: an upper bound on the true one."""
        return min(1.0, self.finite_delta(epsilon) + self.infinity_mass)

    def finite_delta(self, epsilon: float) -> float:
        """The finite losses' share of δ(ε): Σ_(l > ε) pmf·(1 − e^(ε − l)) (no mass at +∞)."""
        l = self.losses
        keep = l > epsilon
        return float(_SUM(self.pmf[keep] * -np.expm1(epsilon - l[keep])))

    def mean_var(self) -> tuple[float, float]:
        """Mean and variance of the finite part of the loss under P (normalized)."""
        w = np.maximum(self.pmf, 0.0)
        total = float(_SUM(w))
        if total <= 0.0:
            return 0.0, 0.0
        l = self.losses
        mean = float(_SUM(w * l) / total)
        var = float(_SUM(w * (l - mean) ** 2) / total)
        return mean, var
