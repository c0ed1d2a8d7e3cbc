"""Accounting for DP-SGD: the ε of a training run, and the noise multiplier for a target ε.

One step of DP-SGD (Abadi et al. 2016, https://arxiv.org/abs/1607.00133) samples a batch,
clips each example's gradient to norm C and adds N(0, σ²C² I) to their sum: a subsampled
Gaussian mechanism with noise multiplier σ (μ = 1/σ per step). Two samplings:

- ``"poisson"``: each example joins a batch independently with probability q = B/N; add/remove
  neighbours (the usual DP-SGD analysis, as in Opacus and dp_accounting).
- ``"without-replacement"``: fixed batches of B drawn without replacement; substitution
  neighbours, whose sensitivity is 2C (one clipped gradient replaced by another), so μ = 2/σ
  (Zhu, Dong, Wang 2022, https://arxiv.org/abs/2106.08567, Thm 10). dp_accounting's RDP
  treats the same event with sensitivity C: its numbers are for a different neighbouring
  relation.

Accountants (each result says what it is):

- ``"pld"`` (default): certified upper bound, within ~0.05 % of the true ε at the default
  precision, with a certified (lower, upper) bracket (:mod:`approxdp.accounting.pld`); exact
  closed forms for T = 1 and q = 1; from 10^8 steps RDP is computed too and the smaller
  reported (alone where ε > 1000).
- ``"rdp"``: Rényi DP (Mironov, Talwar, Zhang 2019) with the best RDP → DP conversion; a
  certified but looser upper bound.
- ``"gdp-clt"``: the central-limit Gaussian-DP approximation (Bu et al. 2020) — an
  approximation that can under-report ε; never a default.
- ``"amplify+compose"``: the per-step (ε₀, δ₀) amplified by subsampling, then composed by the
  best of basic and advanced composition — what one gets without a PLD/RDP accountant.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from approxdp._validation import check_parameter
from approxdp.accounting.dpsgd.bounds import (
    DELTA_OF,
    EPSILON_OF,
    NO_LOSS_RULE,
    RDP_TOO_FROM,
    TV_RULE,
    event_of,
    live_phases,
    total_variation,
)
from approxdp.accounting.dpsgd.phases import (
    DPSGDPhase,
    check_noise_multiplier,
    check_phases,
    check_sample_rate,
    check_sampling,
    check_steps,
)
from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.pld.accounting import (
    DEFAULT_PRECISION,
    check_precision,
    epsilon_by_direction,
    search_grid_epsilon,
)
from approxdp.accounting.registry import accounting_rule, rule_names
from approxdp.errors import InvalidParameterError, UnknownMethodError

__all__ = [
    "DPSGD_ACCOUNTANTS",
    "AccountantResult",
    "DPSGDPhase",
    "calibrate_dpsgd",
    "compare_dpsgd_accountants",
    "dpsgd_delta",
    "dpsgd_epsilon",
    "dpsgd_schedule_delta",
    "dpsgd_schedule_epsilon",
]

#: The DP-SGD accountants, from the registry (``approxdp.accounting.registry.ACCOUNTING_RULES``
#: says what each certifies, and that none is a filter for adaptively chosen runs).
DPSGD_ACCOUNTANTS = rule_names("dpsgd")
_CERTIFIED = tuple(
    name for name in DPSGD_ACCOUNTANTS
    if accounting_rule(name, "dpsgd").certifies != "approximation"
)


def _check_accountant(accountant: Any) -> str:
    if not isinstance(accountant, str) or accountant not in DPSGD_ACCOUNTANTS:
        raise UnknownMethodError(
            f"accountant must be one of {DPSGD_ACCOUNTANTS}, got accountant={accountant!r}"
        )
    return accountant


def _solve(
    phases: Sequence[DPSGDPhase],
    targets: Any,
    name: str,
    sampling: str,
    accountant: str,
    precision: float,
) -> Guarantee:
    """ε at each δ (``name="delta"``) or δ at each ε (``name="epsilon"``): one scalar solve per
    entry (each certified on its own), packed into one Guarantee of the targets' shape."""
    if name == "delta":
        arr = check_parameter("delta", targets)
    else:
        arr = check_parameter("epsilon", targets)
    sampling = check_sampling(sampling)
    accountant = _check_accountant(accountant)
    precision = check_precision(precision)
    live = live_phases(phases)
    tv = total_variation(live, sampling)
    flat = [_one(live, float(x), name, sampling, accountant, precision, tv) for x in arr.flat]
    if arr.ndim == 0:
        return flat[0]
    eps = np.array([float(g.epsilon) for g in flat]).reshape(arr.shape)
    dlt = np.array([float(g.delta) for g in flat]).reshape(arr.shape)
    bracket = None
    if all(g.bracket is not None for g in flat):
        lo = np.array([float(g.bracket[0]) for g in flat if g.bracket]).reshape(arr.shape)
        hi = np.array([float(g.bracket[1]) for g in flat if g.bracket]).reshape(arr.shape)
        bracket = (lo, hi)
    kinds = {g.kind for g in flat}
    kind = flat[0].kind if len(kinds) == 1 else "upper bound"
    rules = list(dict.fromkeys(g.rule for g in flat))
    return Guarantee(eps, dlt, kind, "; ".join(rules), bracket=bracket)


def _one(
    live: Sequence[DPSGDPhase],
    target: float,
    name: str,
    sampling: str,
    accountant: str,
    precision: float,
    tv: float,
) -> Guarantee:
    if not live:  # every phase had σ = ∞
        return Guarantee(
            0.0 if name == "delta" else target, target if name == "delta" else 0.0,
            "exact", NO_LOSS_RULE, bracket=(0.0, 0.0),
        )
    certified = accountant in _CERTIFIED
    if name == "delta":
        if certified and tv <= target:  # (0, δ)-DP outright: every accountant agrees
            return Guarantee(0.0, target, "exact", TV_RULE, bracket=(0.0, 0.0))
        return EPSILON_OF[accountant](live, target, sampling, precision)
    g = DELTA_OF[accountant](live, target, sampling, precision)
    if certified and float(g.delta) > tv:  # δ(ε) ≤ δ(0) ≤ the summed total variation
        return Guarantee(target, tv, "upper bound", TV_RULE,
                         bracket=(float(g.bracket[0]) if g.bracket else 0.0, tv)
                         if g.bracket else None)
    return g


def dpsgd_schedule_epsilon(
    phases: Any,
    *,
    delta: Any,
    sampling: str = "poisson",
    accountant: str = "pld",
    precision: float = DEFAULT_PRECISION,
) -> Guarantee:
    """The ε at δ of a DP-SGD run made of phases (σ_i, q_i, T_i): a training schedule.

    Every step of every phase composes (adaptively); the PLD accountant takes one FFT per
    distinct phase whatever its number of steps (Koskela et al. 2021,
    https://arxiv.org/abs/2006.07134), RDP sums the phases' curves, the GDP-CLT
    approximation composes the phases' μ as Gaussian DP.

    Args:
        phases: :class:`DPSGDPhase` objects or (noise_multiplier, sample_rate, steps) triples
            (Opacus's ``accountant.history`` is such a list).
        delta: δ in (0, 1), or an array of them (each entry solved and certified on its own).
        sampling: as in :func:`dpsgd_epsilon`.
        accountant: as in :func:`dpsgd_epsilon`.
        precision: as in :func:`dpsgd_epsilon`.

    Returns:
        A :class:`~approxdp.accounting.Guarantee`; for an array of δ, ``epsilon``, ``delta``
        and each end of ``bracket`` are arrays of δ's shape.

    Example:
        >>> g = dpsgd_schedule_epsilon([(1.1, 0.004, 5000), (1.5, 0.008, 5000)], delta=1e-5)
        >>> round(g.epsilon, 2)
        2.18
    """
    return _solve(check_phases(phases), delta, "delta", sampling, accountant, precision)


def dpsgd_schedule_delta(
    phases: Any,
    *,
    epsilon: Any,
    sampling: str = "poisson",
    accountant: str = "pld",
    precision: float = DEFAULT_PRECISION,
) -> Guarantee:
    """The δ at ε of a DP-SGD run made of phases (σ_i, q_i, T_i) (see
    :func:`dpsgd_schedule_epsilon`); ``epsilon`` may be an array. The PLD's ``bracket``
    certifies (lower, upper) around the true δ."""
    return _solve(check_phases(phases), epsilon, "epsilon", sampling, accountant, precision)


def _single(noise_multiplier: Any, sample_rate: Any, steps: Any) -> tuple[DPSGDPhase, ...]:
    return (
        DPSGDPhase(
            check_noise_multiplier(noise_multiplier),
            check_sample_rate(sample_rate),
            check_steps(steps),
        ),
    )


def dpsgd_epsilon(
    *,
    noise_multiplier: Any,
    sample_rate: Any,
    steps: Any,
    delta: Any,
    sampling: str = "poisson",
    accountant: str = "pld",
    precision: float = DEFAULT_PRECISION,
) -> Guarantee:
    """The ε of T steps of DP-SGD at δ.

    Args:
        noise_multiplier: σ = noise std / clipping norm, in (0, ∞].
        sample_rate: q in (0, 1] (batch size / dataset size).
        steps: T, an integer in [1, 10^12].
        delta: δ in (0, 1), or an array of them (each entry solved and certified on its own;
            ``epsilon``, ``delta`` and the bracket's ends come back as arrays of its shape).
        sampling: ``"poisson"`` (add/remove neighbours) or ``"without-replacement"``
            (substitution neighbours, sensitivity 2C).
        accountant: ``"pld"`` (certified, tight; default), ``"rdp"`` (certified, looser),
            ``"gdp-clt"`` (an approximation) or ``"amplify+compose"`` (loose).
        precision: PLD only: the target relative excess of ε over the true value (default
            1e-3; smaller is slower).

    Returns:
        A :class:`~approxdp.accounting.Guarantee`; ``kind`` says "exact", "upper bound" or
        "approximation", ``bracket`` (PLD) certifies (lower, upper) around the true ε.

    Raises:
        InvalidParameterError: a value out of range, or an array where one number is meant.
        ParameterTypeError: a value of the wrong type.
        UnknownMethodError: an unknown ``sampling`` or ``accountant``.

    Example:
        >>> g = dpsgd_epsilon(noise_multiplier=1.1, sample_rate=256 / 60000, steps=14063,
        ...                   delta=1e-5)
        >>> round(g.epsilon, 2), g.kind
        (2.38, 'upper bound')
    """
    phases = _single(noise_multiplier, sample_rate, steps)
    return _solve(phases, delta, "delta", sampling, accountant, precision)


def dpsgd_delta(
    *,
    noise_multiplier: Any,
    sample_rate: Any,
    steps: Any,
    epsilon: Any,
    sampling: str = "poisson",
    accountant: str = "pld",
    precision: float = DEFAULT_PRECISION,
) -> Guarantee:
    """The δ of T steps of DP-SGD at ε (the inverse of :func:`dpsgd_epsilon`).

    Args:
        noise_multiplier: σ in (0, ∞].
        sample_rate: q in (0, 1].
        steps: T, an integer in [1, 10^12].
        epsilon: ε ≥ 0 (finite), or an array of them (each entry certified on its own).
        sampling: as in :func:`dpsgd_epsilon`.
        accountant: as in :func:`dpsgd_epsilon`.
        precision: as in :func:`dpsgd_epsilon`.

    Returns:
        A :class:`~approxdp.accounting.Guarantee`; the PLD's ``bracket`` certifies (lower,
        upper) around the true δ.

    Example:
        >>> g = dpsgd_delta(noise_multiplier=1.1, sample_rate=256 / 60000, steps=14063,
        ...                 epsilon=2.5)
        >>> f"{g.delta:.2e}", g.kind
        ('4.35e-06', 'upper bound')
    """
    phases = _single(noise_multiplier, sample_rate, steps)
    return _solve(phases, epsilon, "epsilon", sampling, accountant, precision)


def _scalar_target(name: str, value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.ndim != 0:
        raise InvalidParameterError(
            f"{name} must be a single number here, got an array of shape {value.shape}"
        )
    return value


def _pld(
    sigma: float,
    q: float,
    steps: int,
    delta: float,
    sampling: str,
    precision: float,
) -> Guarantee:
    """The PLD accountant's ε for one phase at one δ (scalars already valid)."""
    return _solve((DPSGDPhase(sigma, q, steps),), delta, "delta", sampling, "pld", precision)


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


@dataclass(frozen=True, slots=True)
class AccountantResult:
    """One row of :func:`compare_dpsgd_accountants`."""

    accountant: str
    guarantee: Guarantee
    seconds: float


def compare_dpsgd_accountants(
    *,
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float,
    sampling: str = "poisson",
    accountants: tuple[str, ...] = DPSGD_ACCOUNTANTS,
) -> list[AccountantResult]:
    """ε under each accountant, with its kind and the time it took (for side-by-side views)."""
    rows: list[AccountantResult] = []
    for name in accountants:
        start = time.perf_counter()
        g = dpsgd_epsilon(
            noise_multiplier=noise_multiplier,
            sample_rate=sample_rate,
            steps=steps,
            delta=delta,
            sampling=sampling,
            accountant=name,
        )
        rows.append(AccountantResult(name, g, time.perf_counter() - start))
    return rows

