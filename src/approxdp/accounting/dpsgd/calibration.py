"""The least noise multiplier σ whose certified ε after T steps of DP-SGD is at most a target.

:func:`calibrate_dpsgd` searches σ on the PLD accountant's ε
(:func:`~approxdp.accounting.dpsgd.accountants.dpsgd_epsilon`; Koskela et al. 2021,
https://arxiv.org/abs/2006.07134), starting from the central-limit guess of Bu et al. 2020
(https://arxiv.org/abs/1911.11607), and returns σ only once that ε certifies it: it never
under-noises.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from approxdp._validation import check_parameter
from approxdp.accounting.dpsgd.bounds import EPSILON_OF, RDP_TOO_FROM, event_of
from approxdp.accounting.dpsgd.phases import (
    DPSGDPhase,
    check_sample_rate,
    check_sampling,
    check_steps,
)
from approxdp.accounting.pld.accounting import (
    DEFAULT_PRECISION,
    check_precision,
    epsilon_by_direction,
    search_grid_epsilon,
)
from approxdp.errors import InvalidParameterError

__all__ = ["calibrate_dpsgd"]


def _scalar_target(name: str, value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.ndim != 0:
        raise InvalidParameterError(
            f"{name} must be a single number here, got an array of shape {value.shape}"
        )
    return value


def _event(sigma: float, q: float, sampling: str) -> Any:
    return event_of(DPSGDPhase(sigma, q, 1), sampling)


def calibrate_dpsgd(
    *,
    epsilon: float,
    delta: float,
    sample_rate: float,
    steps: int,
    sampling: str = "poisson",
    precision: float = DEFAULT_PRECISION,
) -> float:
    """The least noise multiplier σ whose certified ε after T steps (:func:`dpsgd_epsilon`,
    PLD accountant) is ≤ ``epsilon``.

    Never under-noises, and within about ``precision``/10 (relative) of the least σ that
    :func:`dpsgd_epsilon` certifies: the search keeps a bracket [lo, hi] with ε(hi) ≤ target
    < ε(lo) on one fixed grid (the one :func:`dpsgd_epsilon` ends on near the answer, so that
    ε(σ) is monotone and each try is one pass; aimed ``precision``/10 under the target),
    follows the neighbouring direction that dominates, and returns ``hi`` once
    :func:`dpsgd_epsilon` itself certifies it.

    Example:
        >>> s = calibrate_dpsgd(epsilon=3.0, delta=1e-5, sample_rate=256 / 60000, steps=14063)
        >>> round(s, 3)
        0.969
    """
    target = float(
        check_parameter("epsilon", epsilon, "epsilon_positive")
    )
    q, t = check_sample_rate(sample_rate), check_steps(steps)
    d = float(check_parameter("delta", _scalar_target("delta", delta)))
    sampling = check_sampling(sampling)
    precision = check_precision(precision)
    from approxdp.calibration import calibrate_gaussian

    # start from the central-limit guess μ_tot ≈ q √(T (e^(μ²) − 1)) (Bu et al. 2020)
    mu_tot = 1.0 / float(calibrate_gaussian(target, d))
    scale = 2.0 if sampling == "without-replacement" else 1.0
    if q < 1.0:
        sigma0 = scale / math.sqrt(math.log1p(mu_tot * mu_tot / (q * q * t)))
    else:
        sigma0 = scale * math.sqrt(t) / mu_tot

    def full(sigma: float) -> float:  # dpsgd_epsilon's own answer (without its bracket)
        phase = (DPSGDPhase(sigma, q, t),)
        return float(EPSILON_OF["pld"](phase, d, sampling, precision, bracket=False).epsilon)

    if q == 1.0 or t == 1:  # closed forms: plain bisection on the exact ε
        return _bisect_sigma(full, target, sigma0, precision,
                             slope=_clt_slope(mu_tot, d, q, t, scale))
    h, names, eps0 = search_grid_epsilon([(_event(sigma0, q, sampling), t)], d, precision)
    rdp_too = t >= RDP_TOO_FROM  # there dpsgd_epsilon reports the smaller of PLD and RDP

    def eps_of(sigma: float) -> float:
        items = [(_event(sigma, q, sampling), t)]
        # the dominant direction first: above the target, the other cannot bring ε under it
        # (the search only needs the side; the secant then aims a little short)
        pld = 0.0
        for name in names:
            pld = max(pld, epsilon_by_direction(items, d, h=h, directions=(name,),
                                                tilt_at=target)[name])
            if pld > target:
                break
        if rdp_too:
            phase = (DPSGDPhase(sigma, q, t),)
            pld = min(pld, float(EPSILON_OF["rdp"](phase, d, sampling, precision).epsilon))
        return pld

    # aimed a hair under the target (precision/10 of it: σ moves about as much), so that the
    # final check on dpsgd_epsilon's own grid usually passes at once
    # its first point is σ0, which search_grid_epsilon has just composed on this grid (RDP,
    # where it counts too, is cheap)
    known = eps0
    if rdp_too:
        phase0 = (DPSGDPhase(sigma0, q, t),)
        known = min(known, float(EPSILON_OF["rdp"](phase0, d, sampling, precision).epsilon))
    sigma = _bisect_sigma(eps_of, target * (1.0 - precision / 10.0), sigma0, precision,
                          known=known, slope=_clt_slope(mu_tot, d, q, t, scale))
    # the search held one grid; dpsgd_epsilon picks its own (and takes both directions): step
    # up until it certifies the answer too, by about the relative excess it reports (ε falls
    # at least as fast as 1/σ here)
    for _ in range(60):
        got = full(sigma)
        if got <= target:
            return sigma
        sigma *= 1.0 + max(precision / 200.0, min(got / target - 1.0, 0.05))
    raise InvalidParameterError(  # pragma: no cover - each step lowers ε
        f"could not certify a noise multiplier for epsilon={target:g}"
    )


def _max_of(
    eps_of: Callable[[float, tuple[str, ...]], float], names: tuple[str, ...], sigma: float
) -> float:
    return eps_of(sigma, names)


def _clt_slope(mu_tot: float, delta: float, q: float, steps: int, scale: float) -> float:
    """d log ε / d log σ of the central-limit approximation at μ_tot (Bu et al. 2020:
    μ_tot = q √(T (e^(1/σ'²) − 1)), σ' = σ/scale): the first step of the σ search. Near the
    answer the PLD's ε follows it closely for many steps, and loosely for few (the search
    then measures its own slope)."""
    from approxdp.profiles.gaussian import gaussian_epsilon

    r = 1e-3
    lo = float(gaussian_epsilon(1.0 / (mu_tot / (1.0 + r)), delta))
    hi = float(gaussian_epsilon(1.0 / (mu_tot * (1.0 + r)), delta))
    if not (lo > 0.0 and hi > lo and math.isfinite(hi)):
        return -1.0
    per_mu = (math.log(hi) - math.log(lo)) / (2.0 * math.log1p(r))
    if q < 1.0:  # d log μ / d log σ = −x e^x / (e^x − 1), x = 1/σ'² = log1p(μ²/(q²T))
        x = math.log1p(mu_tot * mu_tot / (q * q * steps))
        per_sigma = -x / -math.expm1(-x) if x > 0.0 else -1.0
    else:
        per_sigma = -1.0
    slope = per_mu * per_sigma
    return slope if math.isfinite(slope) and slope < 0.0 else -1.0


def _bisect_sigma(
    eps_of: Callable[[float], float], target: float, sigma0: float, precision: float,
    known: float | None = None, slope: float = -1.0,
) -> float:
    """Least σ (to relative ``precision``/20) with eps_of(σ) ≤ target, for a decreasing
    eps_of: bracket from σ0 (``known``: eps_of(σ0), if already computed) by steps along the
    slope d log ε / d log σ (``slope`` at first, then the one measured), each aimed
    ``precision``/40 past the predicted root (then twice, four times as far ... while it
    misses), then regula falsi (Illinois) in log σ, returning the bracket's private end.
    With a good slope the first step brackets the root within about ``precision``/40 and
    one secant step closes it."""
    f0 = (eps_of(sigma0) if known is None else known) - target
    lo = hi = sigma0
    f_lo = f_hi = f0
    over = precision / 40.0
    prev: tuple[float, float] | None = None

    def jump(sigma: float, f: float, up: bool) -> float:
        nonlocal slope, over
        eps = f + target
        if prev is not None and prev[0] != sigma:  # the slope measured between the last two
            p_sigma, p_eps = prev
            if eps > 0.0 and p_eps > 0.0 and math.isfinite(eps) and math.isfinite(p_eps):
                measured = (math.log(eps) - math.log(p_eps)) / (
                    math.log(sigma) - math.log(p_sigma))
                if math.isfinite(measured) and measured < 0.0:
                    slope = measured
        if eps > 0.0 and math.isfinite(eps) and target > 0.0:
            step = math.log(target / eps) / slope  # to the predicted root
        else:
            step = 0.05 if up else -0.05
        step += over if up else -over
        over *= 4.0
        if up:
            return sigma * math.exp(min(max(step, over / 4.0), 1.0))
        return sigma * math.exp(max(min(step, -over / 4.0), -1.0))

    while f_hi > 0.0:  # σ too small: move up
        lo, f_lo = hi, f_hi
        nxt = jump(hi, f_hi, up=True)
        prev = (hi, f_hi + target)
        hi = nxt
        if hi > 1e8:
            raise InvalidParameterError(
                f"no noise multiplier up to 1e8 reaches epsilon={target:g}"
            )
        f_hi = eps_of(hi) - target
    while f_lo <= 0.0:  # σ large enough: move down
        hi, f_hi = lo, f_lo
        nxt = jump(lo, f_lo, up=False)
        prev = (lo, f_lo + target)
        lo = nxt
        if lo < 1e-6:
            return hi
        f_lo = eps_of(lo) - target
    # the secant on log ε against log σ (ε is close to a power of σ): its sign is f's
    g_lo, g_hi = _log_gap(f_lo + target, target), _log_gap(f_hi + target, target)
    side = 0
    while hi / lo - 1.0 > precision / 20.0:
        a, b = math.log(lo), math.log(hi)
        if math.isfinite(g_lo) and math.isfinite(g_hi) and g_lo != g_hi:
            x = b - g_hi * (b - a) / (g_hi - g_lo)  # secant in log σ
        else:
            x = 0.5 * (a + b)
        # (kept off the ends: by 1 % of the bracket, or by precision/80 where the bracket
        # is already narrow against it — a step that landed just past the root)
        margin = min(0.01 * (b - a), precision / 80.0)
        x = min(max(x, a + margin), b - margin)
        mid = math.exp(x)
        eps_mid = eps_of(mid)
        g_mid = _log_gap(eps_mid, target)
        if eps_mid <= target:
            hi, g_hi = mid, g_mid
            if side == 1:
                g_lo /= 2.0  # Illinois: keep the stale end from stalling the secant
            side = 1
        else:
            lo, g_lo = mid, g_mid
            if side == -1:
                g_hi /= 2.0
            side = -1
    return hi


def _log_gap(eps: float, target: float) -> float:
    """log(ε/target): ≤ 0 exactly where ε ≤ target (−inf at ε = 0)."""
    if eps <= 0.0:
        return -math.inf
    return math.log(eps / target) if math.isfinite(eps) else math.inf
