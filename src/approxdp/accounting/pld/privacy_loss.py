"""Privacy-loss distributions of single mechanisms, as cumulative distribution functions.

A mechanism's privacy is described by a *dominating pair* (P, Q) of distributions (Zhu, Dong,
Wang 2022, https://arxiv.org/abs/2106.08567, Def. 7): its privacy profile is the hockey-stick
divergence δ(ε) = sup_S P(S) − e^ε Q(S). The *privacy loss* is L = log(dP/dQ) under P
(Koskela, Jälkö, Honkela 2020, https://arxiv.org/abs/1906.03049, Sec. 3); δ(ε) =
E_P[(1 − e^(ε−L))₊] + P(L = ∞).

Each source here answers one question, vectorized over sorted loss values e:
``cdfs(e) -> LossCDF(FP, SP, FQ, SQ)``, with FP = P(L ≤ e), SP = P(L > e) and the same under
Q. Both tails are returned because each is computed directly (never as 1 − the other), so
interval masses in either tail keep their relative accuracy. That is all that the pessimistic
discretization (:mod:`approxdp.accounting.pld.compose`) needs.

Sources:

- :class:`GaussianLoss`: N(μ, 1) vs N(0, 1), μ = Δ/σ (loss μx − μ²/2; symmetric).
- :class:`LaplaceLoss`: Lap(1, 1/ε₀) vs Lap(0, 1/ε₀) (loss in [−ε₀, ε₀]; symmetric).
- :class:`DiscreteGaussianLoss`: N_Z(Δ, σ²) vs N_Z(0, σ²) for an integer Δ (Canonne, Kamath,
  Steinke 2020, https://arxiv.org/abs/2004.00010).
- :class:`EpsilonDeltaLoss`: the dominating pair of every (ε, δ)-DP mechanism (Kairouz, Oh,
  Viswanath 2017, https://arxiv.org/abs/1311.0776, Thm 2.1's four-point distributions).
- :class:`SubsampledLoss`: Poisson subsampling with rate q of a pair (A, B): the *remove*
  direction (qA + (1−q)B, B) and the *add* direction (B, qA + (1−q)B) (Zhu, Dong, Wang 2022,
  Thm 9); sampling without replacement under substitution uses the remove-direction pair alone
  (ibid. Thm 10; Balle, Barthe, Gaboardi 2018, https://arxiv.org/abs/1807.01647, Thm 9).

The outer loss of a subsampled pair is f(l) = log(1 − q + q e^l), a monotone function of the
inner loss l, so its CDFs follow from the inner ones at l = f⁻¹(e).

The CDF record, the source protocol and the bounds on the CDFs' rounding are in
:mod:`approxdp.accounting.pld.loss_cdfs`; the Laplace, discrete-Gaussian and (ε, δ) sources in
:mod:`approxdp.accounting.pld.mechanism_losses` (re-exported here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from approxdp.accounting.pld.loss_cdfs import (  # the public ones re-exported: old paths
    _TINY,
    _U,
    CDFError,
    LossCDF,
    LossSource,
    _down,
    _ends,
    _gaussian_value_error,
    _moved_error,
    _normal_tails,
    _pinned,
    _sliver,
    _up,
    cdf_errors,
    cdfs_with_errors,
    loss_interval,
    normal_cdf,
    normal_interval,
    sliver_guard,
)
from approxdp.accounting.pld.mechanism_losses import (  # re-exported: old paths
    DiscreteGaussianLoss,
    EpsilonDeltaLoss,
    LaplaceLoss,
)
from approxdp.accounting.pld.quiet import quiet

# (loss_cdfs's and mechanism_losses's names again, on purpose: re-exported from their old path)
__all__ = [
    "CDFError",
    "DiscreteGaussianLoss",
    "EpsilonDeltaLoss",
    "GaussianLoss",
    "LaplaceLoss",
    "LossCDF",
    "LossSource",
    "SubsampledLoss",
    "cdf_errors",
    "cdfs_with_errors",
    "loss_interval",
    "normal_interval",
    "sliver_guard",
]

FloatArray = npt.NDArray[np.float64]



@dataclass(frozen=True, slots=True)
class GaussianLoss:
    """N(μ, 1) vs N(0, 1): the Gaussian mechanism with μ = Δ/σ (Balle, Wang 2018,
    https://arxiv.org/abs/1805.06530, Thm 8). The loss at x is μx − μ²/2, so L ~ N(μ²/2, μ²)
    under P and N(−μ²/2, μ²) under Q."""

    mu: float

    @property
    def key(self) -> tuple[object, ...]:
        return ("gaussian", self.mu)

    def cdfs(self, edges: FloatArray) -> LossCDF:
        mu = self.mu
        with quiet():
            x = edges / mu + 0.5 * mu  # loss ≤ e ⟺ x ≤ e/μ + μ/2 (μ² is never formed)
        fp, sp = _normal_tails(x - mu)
        fq, sq = _normal_tails(x)
        return LossCDF(fp, sp, fq, sq)

    def cdf_error(self, edges: FloatArray) -> CDFError:
        """Per edge, the error bounds of :meth:`cdfs` (:class:`CDFError`): x = e/μ + μ/2
        rounds twice, by ≤ u·(|e/μ| + |x|) ≤ u·(2|e|/μ + μ/2)."""
        return self.cdfs_and_error(edges)[1]

    def cdfs_and_error(self, edges: FloatArray) -> tuple[LossCDF, CDFError]:
        """:meth:`cdfs` and :meth:`cdf_error` from one evaluation of x."""
        mu = self.mu
        with quiet():
            e_mu = edges / mu
            x = e_mu + 0.5 * mu
            value = _gaussian_value_error(e_mu, mu)
        fp, sp = _normal_tails(x - mu)
        fq, sq = _normal_tails(x)
        top = _ends(edges) / mu
        dx = _U * (2.0 * top + 0.5 * mu) * (1.0 + 8.0 * _U)
        rho, shift = _sliver(top + mu, dx, mu)
        return LossCDF(fp, sp, fq, sq), CDFError(value, _TINY, rho, shift)


def log_expm1_or_minus_inf(t: FloatArray) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """log(expm1(t)) where t > 0 (t + log(−expm1(−t)) above 1, the direct form below: both
    stable), −inf at and below 0; and the mask of the finite entries. The preimage
    f⁻¹(e) of a subsampled loss (:meth:`SubsampledLoss._inner_edges`, and the batched form in
    :mod:`approxdp.accounting.pld.batched`) is this plus log((1 − q)/q)."""
    finite = t > 0.0
    big = t > 1.0
    with quiet():
        out = np.log(np.expm1(t))  # (the direct form everywhere, then the others replaced)
    out[~finite] = -np.inf
    if big.any():
        out[big] = t[big] + np.log(-np.expm1(-t[big]))
    return out, finite


@dataclass(frozen=True, slots=True)
class SubsampledLoss:
    """Poisson subsampling with rate q of an inner pair (A, B), one direction.

    ``direction="remove"``: (qA + (1−q)B, B), loss f(l) = log(1 − q + q e^l) ≥ log(1 − q).
    ``direction="add"``: (B, qA + (1−q)B), loss −f(l) ≤ −log(1 − q).
    (Zhu, Dong, Wang 2022, https://arxiv.org/abs/2106.08567, Thm 9; Mironov, Talwar, Zhang
    2019, https://arxiv.org/abs/1908.10530, Sec. 3.)
    """

    inner: LossSource
    q: float
    direction: str = "remove"

    @property
    def key(self) -> tuple[object, ...]:
        return ("subsampled", self.inner.key, self.q, self.direction)

    def _inner_edges(self, e: FloatArray) -> FloatArray:
        """f⁻¹(e) = log((e^e − 1 + q)/q), −inf at and below log(1 − q), stably."""
        q = self.q
        log1mq = math.log1p(-q)
        t = np.asarray(e - log1mq, dtype=np.float64)  # e^e − (1−q) = (1−q)·expm1(t)
        out, finite = log_expm1_or_minus_inf(t)
        out[finite] += log1mq - math.log(q)
        return out

    def _inner_error(self, e: FloatArray, g: FloatArray, extra: float = 0.0) -> CDFError:
        """:class:`CDFError` per outer edge e (sorted either way; already negated for the add
        direction) of the inner Gaussian's four CDF values at x = g/μ + μ/2, g = f⁻¹(e) as
        :meth:`_inner_edges` forms it (the sliver's outer losses are within μ·δx of e:
        |f′| ≤ 1); ``extra``·u is added to ``value`` (a mixture's rounding).

        x's error, first order in u with a margin (factors 1 + 8u): t = e − log(1 − q) errs
        by δt ≤ u(|t| + 2|log(1 − q)|) (log1p within 2u); G(t) = log(expm1(t)), evaluated
        within 4u + 2u|G|, moves by ≤ δt/(1 − e^(−(t − δt))) ≤ δt·(1 + 1/(t − δt))
        (|G′| = 1/(1 − e^(−t)), decreasing); the constant log(1 − q) − log q and the two
        additions add u(3|g| + 5|log(1 − q)| + 5|log q|); then x = g/μ + μ/2 adds
        u(|g/μ| + |x|). One bound (ρ, δe) serves every edge with t − δt ≥ |log(1 − q)|/256
        (the largest |e| and |g| among them); the edges nearer the end of the support get
        their own, and the mass of the region their sliver may span: Φ(x_hi), x_hi from
        t + δt with generous slack (for t ≤ δt the preimage is not known to exist at all)."""
        q, mu = self.q, self.inner.mu  # type: ignore[attr-defined]
        log1mq = math.log1p(-q)
        consts = 4.0 + 5.0 * abs(log1mq) + 5.0 * abs(math.log(q))
        ut = _U * (1.0 + 8.0 * _U)
        with quiet():
            value = _gaussian_value_error(g / mu, mu, extra)
            t = e - log1mq  # monotone, as e
            dt_max = ut * (_ends(t) + 2.0 * abs(log1mq))
            floor = abs(log1mq) / 256.0
            # the regular edges: t ≥ floor + δt_max, one end of the (monotone) array
            rising = t.size < 2 or float(t[-1]) >= float(t[0])
            key = t if rising else t[::-1]
            cut = int(np.searchsorted(key, floor + dt_max, side="left"))
            start = int(np.searchsorted(key, -ut * 2.0 * abs(log1mq), side="right"))
            reg = g[cut:] if rising else g[::-1][cut:]
            g_top = _ends(reg)
            dg = (dt_max * (1.0 + 1.0 / floor) + _U * (3.0 * g_top + consts)) * (1.0 + 8.0 * _U)
            dx = (dg / mu + _U * (2.0 * g_top / mu + 0.5 * mu)) * (1.0 + 8.0 * _U)
            rho, shift = _sliver(g_top / mu + mu, dx, mu)
            near = np.arange(start, cut)
            if not rising:
                near = t.size - 1 - near
            near = near[np.isfinite(t[near])]
            if not near.size:
                return CDFError(value, _TINY, rho, shift)
            tn, gn = t[near], g[near]
            dtn = ut * (np.abs(tn) + 2.0 * abs(log1mq))
            low = tn - dtn
            slope = np.where(low > 0.0, 1.0 / -np.expm1(-np.maximum(low, 1e-300)), np.inf)
            dgn = (dtn * slope + _U * (3.0 * np.abs(gn) + consts)) * (1.0 + 8.0 * _U)
            dxn = np.where(
                np.isfinite(gn),
                (dgn / mu + _U * (2.0 * np.abs(gn) / mu + 0.5 * mu)) * (1.0 + 8.0 * _U),
                np.inf,
            )
            zn = np.minimum(np.where(np.isfinite(gn), np.abs(gn) / mu, np.inf), 40.0) + mu
            near_moved = _moved_error(zn, dxn)
            near_shift = mu * dxn * (1.0 + 4.0 * _U)
            g_hi = np.log(np.expm1(tn + dtn)) + (log1mq - math.log(q))
            x_hi = (g_hi + 1e-6 * (1.0 + np.abs(g_hi))) / mu + 0.5 * mu + 1e-6
            near_mass = 2.0 * normal_cdf(x_hi) + _TINY
        return CDFError(value, _TINY, rho, shift, near, near_moved, near_shift, near_mass)

    def cdf_error(self, edges: FloatArray) -> CDFError | None:
        """Per edge, the error bounds of :meth:`cdfs` (:class:`CDFError`): the inner
        Gaussian's (:meth:`_inner_error`) and the mixture's products, 1 − q and sum (4u) in
        ``value``. None for a non-Gaussian inner pair."""
        if not isinstance(self.inner, GaussianLoss):
            return None
        e = edges if self.direction == "remove" else -edges
        return self._inner_error(e, self._inner_edges(e), 4.0)

    def cdfs_and_error(self, edges: FloatArray) -> tuple[LossCDF, CDFError] | None:
        """:meth:`cdfs` and :meth:`cdf_error` from one evaluation of the preimages (None
        for a non-Gaussian inner pair)."""
        if not isinstance(self.inner, GaussianLoss):
            return None
        e = edges if self.direction == "remove" else -edges
        g = self._inner_edges(e)
        return self._outer(edges, g), self._inner_error(e, g, 4.0)

    def split_numerators(self, edges: FloatArray) -> tuple[FloatArray, FloatArray] | None:
        """For each interval (e_{k−1}, e_k] of the sorted outer losses ``edges``: p_k −
        e^(e_{k−1})·r_k (P- and Q-mass of the interval, as :meth:`cdfs` gives them), and a
        bound on its floating-point error — what the connect-the-dots split divides by
        1 − e^(−h) (:func:`~approxdp.accounting.pld.grid.discretize`).

        Written as p − e^e·r, the (1 − q)-part of the mixture cancels between two numbers of
        the interval's size: an error of the CDFs' size, divided by h (which grows to a mean
        shift that adds up over 10^12 steps). With e^e = 1 − q + q·c, c = e^(f⁻¹(e)) =
        (1 − q)·expm1(e − log(1 − q))/q, it is exactly q·(A_k − c·B_k) for the remove
        direction and q·e^e·(c'·B_k − A_k), c' = e^(f⁻¹(−e)), for the add direction, A_k and
        B_k the inner pair's masses of the interval: the (1 − q)-part is gone, and the error
        is q times smaller. For a Gaussian inner pair (None otherwise: the caller splits as
        usual). The inner masses' errors are those of the masses of their cells
        (:meth:`_inner_error`'s value part: ``ndtr``'s own ~z²u, and z = x − μ's rounding,
        which moves Φ(−z) by a relative ~z·δz); the cells' offsets from the exact preimages
        of the edges are guarded by the caller, as for the plain split.

        Returns:
            (numerators, error bounds), one per interval; an infinite bound where the
            numerator could not be formed (far out of float range).
        """
        if not isinstance(self.inner, GaussianLoss):
            return None
        q = self.q
        log1mq = math.log1p(-q)
        left = edges[:-1]
        with quiet():
            if self.direction == "remove":
                g = self._inner_edges(edges)
                c = self.inner.cdfs(g)
                a_mass, a_scale = loss_interval(c.fp, c.sp)
                b_mass, b_scale = loss_interval(c.fq, c.sq)
                t = left - log1mq
                outer = np.full(left.shape, q)
            else:
                g = self._inner_edges(-edges)
                c = self.inner.cdfs(g)
                a_mass, a_scale = loss_interval(c.sp, c.fp)
                b_mass, b_scale = loss_interval(c.sq, c.fq)
                t = -left - log1mq
                outer = q * np.exp(left)
            # the inner CDF values' errors as masses of their cells (ndtr's own, z = x − μ's
            # rounding: :meth:`_inner_error`'s value part; the cells' offsets from the exact
            # preimages are the caller's sliver guard): each interval's mass errs by
            # ≤ 2·max(κ)·scale + 2·max(τ), plus its subtraction
            cells = self._inner_error(edges if self.direction == "remove" else -edges, g)
            kap = np.maximum(cells.value[1:], cells.value[:-1])
            tau = 2.0 * cells.tiny
            ulps_a = ulps_b = 4.0 * _U + 2.0 * kap
            coef = (1.0 - q) * np.expm1(t) / q
            # coef's error: its own rounding, and t's (a rounded difference) times dcoef/dt
            err_coef = 8.0 * _U * np.abs(coef) + 2.0 * _U * (1.0 - q) * np.exp(t) / q * (
                np.abs(t) + 2.0 * abs(log1mq)
            )
            diff = a_mass - coef * b_mass
            if self.direction != "remove":
                diff = -diff
            num = outer * diff
            err = outer * (
                ulps_a * a_scale
                + tau * (1.0 + np.abs(coef))
                + np.abs(coef) * ulps_b * b_scale
                + err_coef * b_mass
                + 4.0 * _U * (a_mass + np.abs(coef) * b_mass)
            ) + 4.0 * _U * np.abs(num)
        bad = ~(np.isfinite(num) & np.isfinite(err))
        return np.where(bad, 0.0, num), np.where(bad, np.inf, err)

    def bin_bounds(self, edges: FloatArray) -> tuple[FloatArray, FloatArray] | None:
        """Certified (lower bounds on the P-masses, upper bounds on the Q-masses) of the
        outer-loss bins (e_{k−1}, e_k] between the sorted ``edges``, to nearly full relative
        accuracy where a bin is narrow in the inner Gaussian's coordinate x
        (:func:`normal_interval`, in extended precision where the platform has it, the
        results rounded outwards to float64): for the rounded loss of the lower bound
        (:func:`~approxdp.accounting.pld.rounded.discretize_rounded`), whose CDF differences
        near the centre would lose ~u/(bin mass) each — over 10^12 steps, percent of the
        mass; this loses ~2u (the final rounding). The bin is the set of x between the
        edges' preimages x = f⁻¹(±e)/μ + μ/2 exactly as :meth:`GaussianLoss.cdfs` forms them
        in float64 (rounded: the bins are still a partition of the outcomes, which is all a
        test needs); its centre and half-width are taken in extended precision, their
        rounding (relative u_x on each, moving the mass by ≤ u_x(|c|(|c| + d) + 1)) added.
        None for a non-Gaussian inner pair; 0 and +∞ where the series is not used."""
        if not isinstance(self.inner, GaussianLoss):
            return None
        q, mu = self.q, self.inner.mu
        g = self._inner_edges(edges if self.direction == "remove" else -edges)
        with quiet():
            x = g / mu + 0.5 * mu
            lo, hi = (x[:-1], x[1:]) if self.direction == "remove" else (x[1:], x[:-1])
            dt = np.longdouble
            ux = float(np.finfo(dt).eps) / 2
            lo_x, hi_x = lo.astype(dt), hi.astype(dt)
            half = (hi_x - lo_x) / 2
            mid = (hi_x + lo_x) / 2
            mid_a = mid - dt(mu)
            a, a_err = normal_interval(mid_a, half)
            b, b_err = normal_interval(mid, half)
            # the centre's and half-width's rounding (relative ux each, twice for A's centre)
            a_err = a_err + a * 4 * ux * (
                (np.abs(mid) + dt(mu)) * (np.abs(mid_a) + half) + 1)
            b_err = b_err + b * 4 * ux * (np.abs(mid) * (np.abs(mid) + half) + 1)
            mix = dt(q) * a + (1 - dt(q)) * b
            mix_err = dt(q) * a_err + (1 - dt(q)) * b_err + 8 * ux * mix
            bad = ~(np.isfinite(a_err) & np.isfinite(b_err) & np.isfinite(mix_err))
            if self.direction == "remove":
                p, p_err, r, r_err = mix, mix_err, b, b_err
            else:
                p, p_err, r, r_err = b, b_err, mix, mix_err
            # (the last subtraction or addition and product round by ≤ ux each: 3ux covers
            # both, then the cast to float64 is rounded outwards)
            p_low = np.where(bad, 0.0, _down((p - p_err) * (1 - 3 * ux)))
            r_high = np.where(bad, np.inf, _up((r + r_err) * (1 + 3 * ux)))
        return p_low, r_high

    def cdfs(self, edges: FloatArray) -> LossCDF:
        return self._outer(
            edges, self._inner_edges(edges if self.direction == "remove" else -edges)
        )

    def _outer(self, edges: FloatArray, g: FloatArray) -> LossCDF:
        """The outer CDFs at ``edges`` from the inner preimages ``g`` (of ``edges``, or of
        ``-edges`` for the add direction)."""
        q = self.q
        log1mq = math.log1p(-q)
        if self.direction == "remove":
            c = self.inner.cdfs(g)
            fp = q * c.fp + (1.0 - q) * c.fq
            sp = q * c.sp + (1.0 - q) * c.sq
            fq, sq = c.fq, c.sq
            return _pinned(edges < log1mq, 0.0, fp, sp, fq, sq)  # every outer loss ≥ log(1 − q)
        # add: outer loss −f(l) <= e  <=>  l >= f⁻¹(−e). Atoms exactly on an edge fall on the
        # same side under P and Q, which is all the discretization needs.
        c = self.inner.cdfs(g)
        fp = c.sq
        sp = c.fq
        fq = q * c.sp + (1.0 - q) * c.sq
        sq = q * c.fp + (1.0 - q) * c.fq
        return _pinned(edges >= -log1mq, 1.0, fp, sp, fq, sq)  # every outer loss ≤ −log(1 − q)
