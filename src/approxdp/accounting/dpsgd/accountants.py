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
  precision (:mod:`approxdp.accounting.pld.compose`); exact closed forms for T = 1 and q = 1.
- ``"rdp"``: Rényi DP (Mironov, Talwar, Zhang 2019) with the best RDP → DP conversion; a
  certified but looser upper bound.
- ``"gdp-clt"``: the central-limit Gaussian-DP approximation (Bu et al. 2020) — an
  approximation that can under-report ε; never a default.
- ``"amplify+compose"``: the per-step (ε₀, δ₀) amplified by subsampling, then composed by the
  best of basic and advanced composition — what one gets without a PLD/RDP accountant.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from approxdp._validation import check_interval, check_probability
from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.pld.accounting import (
    DEFAULT_PRECISION,
    epsilon_by_direction,
    grid_step,
    pld_epsilon,
)
from approxdp.accounting.pld.subsampled_gaussian import subsampled_gaussian_epsilon
from approxdp.accounting.registry import rule_names
from approxdp.errors import InvalidParameterError, ParameterTypeError, UnknownMethodError
from approxdp.events import SAMPLINGS, GaussianEvent, SubsampledEvent

__all__ = [
    "DPSGD_ACCOUNTANTS",
    "AccountantResult",
    "calibrate_dpsgd",
    "compare_dpsgd_accountants",
    "dpsgd_epsilon",
]

#: The DP-SGD accountants, from the registry (``approxdp.accounting.registry.ACCOUNTING_RULES``
#: says what each certifies, and that none is a filter for adaptively chosen runs).
DPSGD_ACCOUNTANTS = rule_names("dpsgd")
_MAX_STEPS = 10**12
_RDP_TOO_FROM = 10**8


def _check_steps(steps: Any) -> int:
    if isinstance(steps, bool) or not isinstance(steps, numbers.Real):
        raise ParameterTypeError(f"steps must be an integer >= 1, got {type(steps).__name__}")
    if not isinstance(steps, numbers.Integral) and not (
        math.isfinite(float(steps)) and float(steps).is_integer()
    ):
        raise InvalidParameterError(f"steps must be an integer >= 1, got steps={steps!r}")
    n = int(float(steps)) if not isinstance(steps, numbers.Integral) else int(steps)
    if not 1 <= n <= _MAX_STEPS:
        raise InvalidParameterError(
            f"steps must be an integer in [1, {_MAX_STEPS:.0e}], got steps={n}"
        )
    return n


def _check_inputs(
    noise_multiplier: Any, sample_rate: Any, steps: Any, delta: Any, sampling: str
) -> tuple[float, float, int, float]:
    sigma = float(
        check_interval("noise_multiplier", noise_multiplier, 0.0, math.inf, low_open=True)
    )
    q = float(check_interval("sample_rate", sample_rate, 0.0, 1.0, low_open=True))
    t = _check_steps(steps)
    d = float(check_probability("delta", delta))
    if sampling not in SAMPLINGS:
        raise UnknownMethodError(f"sampling must be one of {SAMPLINGS}, got sampling={sampling!r}")
    return sigma, q, t, d


def _mu(sigma: float, sampling: str) -> float:
    return (2.0 if sampling == "without-replacement" else 1.0) / sigma


def _event(sigma: float, q: float, sampling: str) -> SubsampledEvent:
    mu = _mu(sigma, sampling)
    return SubsampledEvent(GaussianEvent(sigma=sigma, sensitivity=mu * sigma), q, sampling=sampling)


def _pld(
    sigma: float,
    q: float,
    steps: int,
    delta: float,
    sampling: str,
    precision: float,
    h: float | None = None,
) -> Guarantee:
    mu = _mu(sigma, sampling)
    if math.isinf(sigma):
        return Guarantee(0.0, delta, "exact", "no noise needed")
    if q == 1.0:  # T Gaussians compose exactly to one (Zhao et al. 2019, Lemma 15)
        from approxdp.profiles.gaussian import gaussian_epsilon

        eps = float(gaussian_epsilon(1.0 / (mu * math.sqrt(steps)), delta))
        return Guarantee(
            eps, delta, "exact", "exact Gaussian composition (Zhao et al. 2019, Lemma 15)",
            bracket=(eps, eps),
        )
    direction = "remove" if sampling == "without-replacement" else "both"
    if steps == 1:
        eps = subsampled_gaussian_epsilon(delta, mu, q, direction)
        return Guarantee(
            eps, delta, "exact",
            "subsampled Gaussian, exact one-step profile (Zhu, Dong, Wang 2022, Thm 9)",
            bracket=(eps, eps),
        )
    # beyond ~10^8 steps the PLD's window coarsens its grid (or cannot hold the steps at all);
    # RDP is O(1) in T and also certified, so there the smaller of the two is reported
    many = steps >= _RDP_TOO_FROM and h is None
    try:
        g = pld_epsilon([(_event(sigma, q, sampling), steps)], delta, precision=precision, h=h)
    except InvalidParameterError:
        if not many:
            raise
        rdp = _rdp(sigma, q, steps, delta, sampling)
        return Guarantee(
            rdp.epsilon, delta, "upper bound", f"{rdp.rule} (too many steps for the PLD)"
        )
    if many:
        rdp = _rdp(sigma, q, steps, delta, sampling)
        if float(rdp.epsilon) < float(g.epsilon):
            lower = g.bracket[0] if g.bracket else 0.0
            return Guarantee(
                rdp.epsilon, delta, "upper bound", f"{rdp.rule} (below the PLD's here)",
                bracket=(lower, float(rdp.epsilon)),
            )
    return g


def _rdp(sigma: float, q: float, steps: int, delta: float, sampling: str) -> Guarantee:
    from approxdp.accounting.rdp.conversion import rdp_dpsgd_epsilon

    if sampling == "without-replacement":
        return rdp_dpsgd_epsilon(sigma, q, steps, delta, sampling="without-replacement")
    return rdp_dpsgd_epsilon(sigma, q, steps, delta, sampling="poisson")


def _clt(sigma: float, q: float, steps: int, delta: float, sampling: str) -> Guarantee:
    from approxdp.accounting.dpsgd.gdp_clt import gdp_clt_epsilon

    # substitution neighbours move the clipped sum by 2C: the CLT at noise multiplier σ/2
    scale = 2.0 if sampling == "without-replacement" else 1.0
    return gdp_clt_epsilon(sigma / scale, q, steps, delta)


def _amplify_compose(sigma: float, q: float, steps: int, delta: float, sampling: str) -> Guarantee:
    """Per-step Gaussian (ε₀, δ₀) → subsampling amplification → basic/advanced composition,
    the best over a grid of δ splits (each a valid upper bound)."""
    from approxdp.accounting.composition.closed_form import advanced_composition
    from approxdp.accounting.composition.conversions import amplify_by_subsampling
    from approxdp.profiles.gaussian import gaussian_epsilon

    mu = _mu(sigma, sampling)
    best = math.inf
    for frac in (0.5, 0.9, 0.99):
        step_delta = frac * delta / (steps * q)  # q·δ₀ per step, T steps: frac·δ in total
        if step_delta >= 1.0:
            continue
        eps0 = float(gaussian_epsilon(1.0 / mu, step_delta))
        amp = amplify_by_subsampling(eps0, step_delta, q)
        eps_step = float(amp.epsilon)
        best = min(best, steps * eps_step)  # basic composition uses all of δ on the steps
        slack = (1.0 - frac) * delta
        if slack > 0.0:
            adv = advanced_composition(eps_step, float(amp.delta), steps, slack)
            best = min(best, float(adv.epsilon))
    return Guarantee(
        best, delta, "upper bound",
        "Gaussian (ε₀, δ₀) per step, amplified by subsampling, then basic/advanced composition",
    )


def dpsgd_epsilon(
    *,
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float,
    sampling: str = "poisson",
    accountant: str = "pld",
    precision: float = DEFAULT_PRECISION,
) -> Guarantee:
    """The ε of T steps of DP-SGD at δ.

    Args:
        noise_multiplier: σ = noise std / clipping norm, > 0.
        sample_rate: q in (0, 1] (batch size / dataset size).
        steps: T ≥ 1 (an integer; 10^9 answers in about a second).
        delta: δ in (0, 1).
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
        InvalidParameterError, ParameterTypeError, UnknownMethodError: on bad input.

    Example:
        >>> g = dpsgd_epsilon(noise_multiplier=1.1, sample_rate=256 / 60000, steps=14063,
        ...                   delta=1e-5)
        >>> round(g.epsilon, 2), g.kind
        (2.38, 'upper bound')
    """
    sigma, q, t, d = _check_inputs(noise_multiplier, sample_rate, steps, delta, sampling)
    if accountant == "pld":
        return _pld(sigma, q, t, d, sampling, precision)
    if accountant == "rdp":
        return _rdp(sigma, q, t, d, sampling)
    if accountant == "gdp-clt":
        return _clt(sigma, q, t, d, sampling)
    if accountant == "amplify+compose":
        return _amplify_compose(sigma, q, t, d, sampling)
    raise UnknownMethodError(
        f"accountant must be one of {DPSGD_ACCOUNTANTS}, got accountant={accountant!r}"
    )


def calibrate_dpsgd(
    *,
    epsilon: float,
    delta: float,
    sample_rate: float,
    steps: int,
    sampling: str = "poisson",
    precision: float = DEFAULT_PRECISION,
) -> float:
    """The least noise multiplier σ whose certified (PLD) ε after T steps is ≤ ``epsilon``.

    Never under-noises: the search keeps a bracket [lo, hi] with ε(hi) ≤ target < ε(lo) on
    one fixed grid (so ε(σ) is monotone), follows the neighbouring direction that dominates,
    and returns ``hi`` once both directions certify it. Within about ``precision`` of the least
    σ that is truly (ε, δ)-DP.

    Example:
        >>> s = calibrate_dpsgd(epsilon=3.0, delta=1e-5, sample_rate=256 / 60000, steps=14063)
        >>> round(s, 3)
        0.969
    """
    target = float(
        check_interval("epsilon", epsilon, 0.0, math.inf, low_open=True, high_open=True)
    )
    _, q, t, d = _check_inputs(1.0, sample_rate, steps, delta, sampling)
    from approxdp.calibration import calibrate_gaussian

    # start from the central-limit guess μ_tot ≈ q √(T (e^(μ²) − 1)) (Bu et al. 2020)
    mu_tot = 1.0 / float(calibrate_gaussian(target, d))
    scale = 2.0 if sampling == "without-replacement" else 1.0
    if q < 1.0:
        sigma0 = scale / math.sqrt(math.log1p(mu_tot * mu_tot / (q * q * t)))
    else:
        sigma0 = scale * math.sqrt(t) / mu_tot
    if q == 1.0 or t == 1:  # closed forms: plain bisection on the exact ε
        return _bisect_sigma(
            lambda s: float(_pld(s, q, t, d, sampling, precision).epsilon), target, sigma0,
            precision,
        )
    h = grid_step([(_event(sigma0, q, sampling), t)], d, precision)
    both = ("remove", "add") if sampling == "poisson" else ("remove",)
    start = epsilon_by_direction([(_event(sigma0, q, sampling), t)], d, h=h, directions=both)
    follow = (max(start, key=lambda k: start[k]),)

    def eps_of(sigma: float, names: tuple[str, ...]) -> float:
        res = epsilon_by_direction([(_event(sigma, q, sampling), t)], d, h=h, directions=names)
        return max(res.values())

    for names in (follow, both):
        sigma = _bisect_sigma(partial(_max_of, eps_of, names), target, sigma0, precision)
        if eps_of(sigma, both) <= target:
            break
        # else the other direction dominates near the answer: search on both
    # the search held one grid; make the answer hold on the grid dpsgd_epsilon picks too, so
    # that a user who checks it sees ε ≤ target (both are certified upper bounds)
    for _ in range(200):
        if _pld(sigma, q, t, d, sampling, precision).epsilon <= target:
            return sigma
        sigma *= 1.0 + precision / 50.0
    raise InvalidParameterError(  # pragma: no cover - each step lowers ε
        f"could not certify a noise multiplier for epsilon={target:g}"
    )


def _max_of(
    eps_of: Callable[[float, tuple[str, ...]], float], names: tuple[str, ...], sigma: float
) -> float:
    return eps_of(sigma, names)


def _bisect_sigma(
    eps_of: Callable[[float], float], target: float, sigma0: float, precision: float
) -> float:
    """Least σ (to relative ``precision``/20) with eps_of(σ) ≤ target, for a decreasing
    eps_of: bracket from σ0, then regula falsi (Illinois) in log σ, returning the bracket's
    private end."""
    f0 = eps_of(sigma0) - target
    lo = hi = sigma0
    f_lo = f_hi = f0
    factor = 1.05
    while f_hi > 0.0:  # σ too small: move up
        lo, f_lo = hi, f_hi
        hi *= factor
        factor *= factor
        if hi > 1e8:
            raise InvalidParameterError(
                f"no noise multiplier up to 1e8 reaches epsilon={target:g}"
            )
        f_hi = eps_of(hi) - target
    while f_lo <= 0.0:  # σ large enough: move down
        hi, f_hi = lo, f_lo
        lo /= factor
        factor *= factor
        if lo < 1e-6:
            return hi
        f_lo = eps_of(lo) - target
    side = 0
    while hi / lo - 1.0 > precision / 20.0:
        a, b = math.log(lo), math.log(hi)
        x = b - f_hi * (b - a) / (f_hi - f_lo)  # secant in log σ
        x = min(max(x, a + 0.01 * (b - a)), b - 0.01 * (b - a))
        mid = math.exp(x)
        f_mid = eps_of(mid) - target
        if f_mid <= 0.0:
            hi, f_hi = mid, f_mid
            if side == 1:
                f_lo /= 2.0  # Illinois: keep the stale end from stalling the secant
            side = 1
        else:
            lo, f_lo = mid, f_mid
            if side == -1:
                f_hi /= 2.0
            side = -1
    return hi


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

