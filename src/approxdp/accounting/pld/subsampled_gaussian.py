"""The exact privacy profile of ONE step of the Poisson-subsampled Gaussian mechanism.

A record is kept with probability q, the query (ℓ2-sensitivity Δ) gets N(0, σ² I). With μ = Δ/σ,
A = N(μ, 1) and B = N(0, 1), the two dominating pairs are (Zhu, Dong, Wang 2022,
https://arxiv.org/abs/2106.08567, Thm 9; Balle, Barthe, Gaboardi 2018,
https://arxiv.org/abs/1807.01647, Thm 9 for the "remove" one):

- remove a record: (qA + (1−q)B, B), whose hockey-stick divergence is
  δ_r(ε) = q · δ_G(log(1 + (e^ε − 1)/q));
- add a record: (B, qA + (1−q)B), with c = 1 − (1−q)e^ε > 0,
  δ_a(ε) = c · δ_G(log(q e^ε / c)), and δ_a = 0 for ε ≥ −log(1 − q);

where δ_G is the exact Gaussian profile (Balle, Wang 2018, https://arxiv.org/abs/1805.06530,
Thm 8), evaluated in log space by :mod:`approxdp.profiles.gaussian`. The step is (ε, δ)-DP under
add/remove neighbours iff max(δ_r, δ_a)(ε) ≤ δ. Sampling without replacement under substitution
uses the "remove" pair alone (Zhu, Dong, Wang 2022, Thm 10), with Δ the substitution
sensitivity.

This closed form is the accountant for T = 1 and the independent check of the PLD accountant
(:mod:`approxdp.accounting.pld.compose`).
"""

from __future__ import annotations

import math

from scipy import optimize

from approxdp.profiles.gaussian import gaussian_epsilon, gaussian_log_delta

__all__ = [
    "subsampled_gaussian_delta",
    "subsampled_gaussian_epsilon",
    "subsampled_gaussian_log_delta",
]


def _log_delta_remove(epsilon: float, mu: float, q: float) -> float:
    # log(1 + (e^ε − 1)/q) = log1p(expm1(ε)/q), written stably for large ε
    if epsilon > 30.0:
        inner = epsilon - math.log(q) + math.log1p((q - 1.0) * math.exp(-epsilon))
    else:
        inner = math.log1p(math.expm1(epsilon) / q)
    return math.log(q) + float(gaussian_log_delta(inner, 1.0 / mu))


def _log_delta_add(epsilon: float, mu: float, q: float) -> float:
    if q >= 1.0:  # no subsampling: the Gaussian pair is symmetric
        return float(gaussian_log_delta(epsilon, 1.0 / mu))
    log1mq = math.log1p(-q)
    if epsilon >= -log1mq:
        return -math.inf
    log_c = math.log(-math.expm1(epsilon + log1mq))  # log(1 − (1−q)e^ε)
    inner = max(0.0, math.log(q) + epsilon - log_c)
    return log_c + float(gaussian_log_delta(inner, 1.0 / mu))


def subsampled_gaussian_log_delta(
    epsilon: float, mu: float, q: float, direction: str = "both"
) -> float:
    """log δ(ε) of one subsampled-Gaussian step with μ = Δ/σ and sampling rate q.

    Args:
        epsilon: ε ≥ 0.
        mu: Δ/σ > 0.
        q: sampling probability in (0, 1].
        direction: ``"remove"``, ``"add"`` or ``"both"`` (the larger: add/remove neighbours).
    """
    remove = _log_delta_remove(epsilon, mu, q)
    if direction == "remove":
        return remove
    add = _log_delta_add(epsilon, mu, q)
    return add if direction == "add" else max(remove, add)


def subsampled_gaussian_delta(
    epsilon: float, mu: float, q: float, direction: str = "both"
) -> float:
    """δ(ε) of one subsampled-Gaussian step (see :func:`subsampled_gaussian_log_delta`).

    Example:
        >>> f"{subsampled_gaussian_delta(1.0, 1.0, 0.01):.4e}"
        '2.7320e-09'
    """
    return math.exp(subsampled_gaussian_log_delta(epsilon, mu, q, direction))


def subsampled_gaussian_epsilon(
    delta: float, mu: float, q: float, direction: str = "both"
) -> float:
    """Least ε ≥ 0 with δ(ε) ≤ δ for one subsampled-Gaussian step, rounded up (private side).

    The remove side inverts in closed form (ε = log(1 + q(e^ε' − 1)) with ε' the Gaussian's ε
    at δ/q); the add side by bracketed root finding on its log profile.
    """
    log_target = math.log(delta)
    eps = 0.0
    if subsampled_gaussian_log_delta(0.0, mu, q, "remove") > log_target:
        inner = float(gaussian_epsilon(1.0 / mu, delta / q)) if delta < q else 0.0
        eps = math.log1p(q * math.expm1(inner)) if inner < 30.0 else (
            inner + math.log(q) + math.log1p((1.0 - q) * math.exp(-inner) / q)
        )
    if direction != "remove" and q < 1.0 and _log_delta_add(eps, mu, q) > log_target:
        hi = -math.log1p(-q)

        def f(e: float) -> float:
            return _log_delta_add(e, mu, q) - log_target

        eps = optimize.brentq(f, eps, hi * (1.0 - 1e-15), xtol=1e-300, rtol=4e-16, maxiter=500)
    # round up until the profile is surely within δ (a few ulps of evaluation error)
    bump = 1e-14
    for _ in range(200):
        if subsampled_gaussian_log_delta(eps, mu, q, direction) <= log_target - 1e-12:
            return eps
        eps = max(eps * (1.0 + bump), eps + 1e-300)
        bump *= 2.0
    raise RuntimeError("epsilon round-up did not converge")  # pragma: no cover
