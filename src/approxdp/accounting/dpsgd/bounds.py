"""ε at δ and δ at ε of a DP-SGD schedule under each accountant, for one (scalar) target.

The public functions (:mod:`approxdp.accounting.dpsgd.accountants`) validate, vectorize over
arrays of targets and dispatch here; every function takes validated phases and one δ (or ε).

Shared facts, each a theorem every accountant may use:

- A phase with σ = ∞ adds no privacy loss; a run of such phases is (0, 0)-DP.
- δ(0) is the total variation distance, which is subadditive under composition, and one
  subsampled-Gaussian step's total variation is q·(2Φ(μ/2) − 1) in either direction (Zhu, Dong,
  Wang 2022, https://arxiv.org/abs/2106.08567, Thm 9, at ε = 0). So a run whose summed total
  variation is ≤ δ is exactly (0, δ)-DP, and δ(ε) never exceeds that sum. This makes every
  accountant agree (ε = 0, exact) where the noise is huge, instead of each meeting its own
  floating-point limit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from scipy import optimize, special

from approxdp.accounting.dpsgd.phases import DPSGDPhase
from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.pld.accounting import pld_delta, pld_epsilon
from approxdp.accounting.pld.subsampled_gaussian import (
    subsampled_gaussian_epsilon,
    subsampled_gaussian_log_delta,
)
from approxdp.accounting.rdp.subsampled_gaussian import Sampling
from approxdp.errors import InvalidParameterError
from approxdp.events import GaussianEvent, SubsampledEvent

__all__ = ["DELTA_OF", "EPSILON_OF", "live_phases", "total_variation"]

#: From this many steps (all phases) RDP (O(1) in T, certified) is computed too and the
#: smaller ε reported; where it exceeds :data:`HOPELESS` the PLD is not run at all.
RDP_TOO_FROM = 10**8
HOPELESS = 1e3
TV_RULE = (
    "total variation <= delta: (0, delta)-DP (delta(0) is the total variation, subadditive "
    "under composition; Zhu, Dong, Wang 2022, arXiv:2106.08567, Thm 9)"
)
NO_LOSS_RULE = "no privacy loss (every phase has noise_multiplier = inf)"


def mu_of(sigma: float, sampling: str) -> float:
    """μ = Δ/σ of one step: Δ = C (Poisson, add/remove) or 2C (without replacement,
    substitution: one clipped gradient replaced by another)."""
    return (2.0 if sampling == "without-replacement" else 1.0) / sigma


def event_of(phase: DPSGDPhase, sampling: str) -> SubsampledEvent:
    """One step of ``phase`` as a privacy event (the PLD accountant's input)."""
    sigma = phase.noise_multiplier
    inner = GaussianEvent(sigma=sigma, sensitivity=mu_of(sigma, sampling) * sigma)
    return SubsampledEvent(inner, phase.sample_rate, sampling=sampling)


def live_phases(phases: Sequence[DPSGDPhase]) -> tuple[DPSGDPhase, ...]:
    """The phases that lose any privacy (σ < ∞)."""
    return tuple(p for p in phases if math.isfinite(p.noise_multiplier))


def total_variation(phases: Sequence[DPSGDPhase], sampling: str) -> float:
    """An upper bound on δ(0) of the run: Σ T·q·erf(μ/(2√2)), rounded up."""
    total = 0.0
    for p in live_phases(phases):
        mu = mu_of(p.noise_multiplier, sampling)
        total += p.steps * p.sample_rate * float(special.erf(mu / (2.0 * math.sqrt(2.0))))
    return min(1.0, total * (1.0 + 1e-12))


def _how(sampling: str) -> Sampling:
    return "without-replacement" if sampling == "without-replacement" else "poisson"


def _triples(phases: Sequence[DPSGDPhase]) -> list[tuple[float, float, int]]:
    return [(p.noise_multiplier, p.sample_rate, p.steps) for p in phases]


# -- ε at δ -------------------------------------------------------------------------------


#: The exact profiles' evaluation error in log δ that the closed-form routes allow for
#: (measured against 50-digit mpmath: ≤ 5.7e-13, Gaussian and one-step subsampled, δ down to
#: e^−740; the one-step ε inverse allows for it too).
_EXACT_LOG_ERR = 1e-12
_LEAST_NORMAL = 2.2250738585072014e-308


def _lower_end(eps: float, delta: float, log_delta_at: Callable[[float], float]) -> float:
    """A certified lower end of an exact profile's ε(δ): stepped down from the rounded-up ε
    until the computed log δ(ε) exceeds log δ by the profile's error allowance (the larger of
    :data:`_EXACT_LOG_ERR` and the Gaussian inverse's margin): the true δ there is ≥ δ, so
    the true ε(δ) is at least it (0 if none is found). The inverse's ε itself is above the
    truth by its margin: as a lower end it was ~1e-13 relative above the truth."""
    from approxdp.profiles.gaussian import log_margin

    if not 0.0 < eps < math.inf:
        return 0.0
    log_d = math.log(delta)
    low, step = eps, max(eps * 1e-13, 1e-300)
    for _ in range(120):
        if low <= 0.0:
            return 0.0
        if log_delta_at(low) >= log_d + max(_EXACT_LOG_ERR, float(log_margin(log_d, low))):
            return low
        low -= step
        step *= 2.0
    return 0.0  # pragma: no cover (the steps reach 0 long before)


def _pld_epsilon(
    phases: Sequence[DPSGDPhase], delta: float, sampling: str, precision: float,
    bracket: bool = True,
) -> Guarantee:
    from approxdp.profiles.gaussian import gaussian_epsilon, gaussian_log_delta

    steps = sum(p.steps for p in phases)
    if all(p.sample_rate == 1.0 for p in phases):
        # T Gaussians compose exactly to one (Zhao et al. 2019, Lemma 15)
        mu = math.sqrt(sum(p.steps * mu_of(p.noise_multiplier, sampling) ** 2 for p in phases))
        eps = float(gaussian_epsilon(1.0 / mu, delta))
        low = _lower_end(eps, delta, lambda e: float(gaussian_log_delta(e, 1.0 / mu)))
        rule = "exact Gaussian composition (Zhao et al. 2019, Lemma 15)"
        return Guarantee(eps, delta, "exact", rule, bracket=(low, eps))
    if len(phases) == 1 and steps == 1:
        p = phases[0]
        direction = "remove" if sampling == "without-replacement" else "both"
        mu = mu_of(p.noise_multiplier, sampling)
        eps = subsampled_gaussian_epsilon(delta, mu, p.sample_rate, direction)
        low = _lower_end(eps, delta, lambda e: subsampled_gaussian_log_delta(
            e, mu, p.sample_rate, direction))
        rule = "subsampled Gaussian, exact one-step profile (Zhu, Dong, Wang 2022, Thm 9)"
        return Guarantee(eps, delta, "exact", rule, bracket=(low, eps))
    items = [(event_of(p, sampling), p.steps) for p in phases]
    many = steps >= RDP_TOO_FROM
    if many:
        rdp = _rdp_epsilon(phases, delta, sampling)
        if float(rdp.epsilon) > HOPELESS:  # no privacy to speak of: the O(1) bound will do
            return Guarantee(rdp.epsilon, delta, "upper bound",
                             f"{rdp.rule} (epsilon above {HOPELESS:g}: the PLD is not run)")
    try:
        g = pld_epsilon(items, delta, precision=precision, bracket=bracket)
    except InvalidParameterError:
        if not many:
            raise
        rdp = _rdp_epsilon(phases, delta, sampling)
        return Guarantee(
            rdp.epsilon, delta, "upper bound", f"{rdp.rule} (too many steps for the PLD)"
        )
    if many and float(rdp.epsilon) < float(g.epsilon):
        lower = float(g.bracket[0]) if g.bracket else 0.0
        return Guarantee(
            rdp.epsilon, delta, "upper bound", f"{rdp.rule} (below the PLD's here)",
            bracket=(lower, float(rdp.epsilon)),
        )
    return g


def _rdp_epsilon(
    phases: Sequence[DPSGDPhase], delta: float, sampling: str
) -> Guarantee:
    from approxdp.accounting.rdp.conversion import rdp_schedule_epsilon

    return rdp_schedule_epsilon(_triples(phases), delta, _how(sampling))


def _clt_mu(phases: Sequence[DPSGDPhase], sampling: str) -> float:
    """μ of the central-limit approximation: the phases' μ_i = q_i √(T_i (e^(1/σ_i²) − 1))
    (Bu et al. 2020) composed as Gaussian DP, √(Σ μ_i²) (Dong, Roth, Su 2019, Cor. 3.3)."""
    from approxdp.accounting.dpsgd.gdp_clt import gdp_clt_mu

    # substitution neighbours move the clipped sum by 2C: the CLT at noise multiplier σ/2
    scale = 2.0 if sampling == "without-replacement" else 1.0
    mus = [gdp_clt_mu(p.noise_multiplier / scale, p.sample_rate, p.steps) for p in phases]
    top = max(mus)
    if top == 0.0 or math.isinf(top):
        return top
    return top * math.sqrt(sum((m / top) ** 2 for m in mus))


def _clt_epsilon(
    phases: Sequence[DPSGDPhase], delta: float, sampling: str
) -> Guarantee:
    from approxdp.accounting.dpsgd.gdp_clt import _RULE, gdp_to_epsilon

    return Guarantee(gdp_to_epsilon(_clt_mu(phases, sampling), delta), delta, "approximation",
                     _RULE)


_AMPLIFY_RULE = (
    "Gaussian (ε₀, δ₀) per step, amplified by subsampling, then basic/advanced composition"
)


def _amplify_phase(sigma: float, q: float, steps: int, delta: float, sampling: str) -> float:
    """One phase: per-step Gaussian (ε₀, δ₀) → subsampling amplification → the best of basic
    and advanced composition over a grid of δ splits (each a valid upper bound)."""
    from approxdp.accounting.composition.closed_form import advanced_composition
    from approxdp.accounting.composition.conversions import amplify_by_subsampling
    from approxdp.profiles.gaussian import gaussian_epsilon

    mu = mu_of(sigma, sampling)
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
    return best


def _amplify_epsilon(
    phases: Sequence[DPSGDPhase], delta: float, sampling: str
) -> Guarantee:
    """Each phase at its share of δ (by steps), summed (basic composition across phases)."""
    total = sum(p.steps for p in phases)
    eps = 0.0
    for p in phases:
        share = delta * p.steps / total
        eps += _amplify_phase(p.noise_multiplier, p.sample_rate, p.steps, share, sampling)
    return Guarantee(eps, delta, "upper bound", _AMPLIFY_RULE)


EpsilonOf = Callable[..., Guarantee]


def _certified_only(
    fn: Callable[[Sequence[DPSGDPhase], float, str], Guarantee],
) -> EpsilonOf:
    def run(phases: Sequence[DPSGDPhase], target: float, sampling: str, _: float) -> Guarantee:
        return fn(phases, target, sampling)

    return run


#: ε at δ per accountant: (live phases, δ, sampling, precision) → Guarantee.
EPSILON_OF: dict[str, EpsilonOf] = {
    "pld": _pld_epsilon,
    "rdp": _certified_only(_rdp_epsilon),
    "gdp-clt": _certified_only(_clt_epsilon),
    "amplify+compose": _certified_only(_amplify_epsilon),
}


# -- δ at ε -------------------------------------------------------------------------------


def _pld_delta(
    phases: Sequence[DPSGDPhase], epsilon: float, sampling: str, precision: float
) -> Guarantee:
    from approxdp.profiles.gaussian import gaussian_log_delta

    steps = sum(p.steps for p in phases)
    exact = None
    if all(p.sample_rate == 1.0 for p in phases):
        mu = math.sqrt(sum(p.steps * mu_of(p.noise_multiplier, sampling) ** 2 for p in phases))
        exact = float(gaussian_log_delta(epsilon, 1.0 / mu)), (
            "exact Gaussian composition (Zhao et al. 2019, Lemma 15)"
        )
    elif len(phases) == 1 and steps == 1:
        p = phases[0]
        direction = "remove" if sampling == "without-replacement" else "both"
        mu = mu_of(p.noise_multiplier, sampling)
        exact = subsampled_gaussian_log_delta(epsilon, mu, p.sample_rate, direction), (
            "subsampled Gaussian, exact one-step profile (Zhu, Dong, Wang 2022, Thm 9)"
        )
    if exact is not None:
        log_d, rule = exact
        # up by the profile's own relative error (1e-12, as its ε inverse allows for), and the
        # bracket's lower end down by as much (a certified lower end, not the rounded-up value)
        d = min(1.0, math.exp(log_d + _EXACT_LOG_ERR)) if log_d > -math.inf else 0.0
        low = min(1.0, math.exp(log_d - _EXACT_LOG_ERR)) if log_d > -math.inf else 0.0
        if log_d > -math.inf and d < _LEAST_NORMAL:
            # subnormal (or underflowed to 0): exp's rounding is up to an ulp of 0, which no
            # relative margin covers (σ = 3, q = 1, T = 2, ε = 18.1526 gave δ = 1.0869e-322
            # below the exact 1.09775e-322; ε = 18.2053 gave 0). The upper end is the least
            # normal float (a bound on every such δ; the training accountant sizes its next
            # windows by log(1e-7·δ), which a subnormal δ underflows), the lower end out by
            # two ulps
            d = _LEAST_NORMAL
            low = max(0.0, low - 2.0 * math.ulp(0.0))
        return Guarantee(epsilon, d, "exact", rule, bracket=(low, d))
    items = [(event_of(p, sampling), p.steps) for p in phases]
    return pld_delta(items, epsilon, precision=precision)


def _rdp_delta(phases: Sequence[DPSGDPhase], epsilon: float, sampling: str) -> Guarantee:
    from approxdp.accounting.rdp.conversion import rdp_schedule_delta

    return rdp_schedule_delta(_triples(phases), epsilon, _how(sampling))


def _clt_delta(phases: Sequence[DPSGDPhase], epsilon: float, sampling: str) -> Guarantee:
    from approxdp.accounting.dpsgd.gdp_clt import _RULE, gdp_to_delta

    return Guarantee(epsilon, gdp_to_delta(_clt_mu(phases, sampling), epsilon),
                     "approximation", _RULE)


def _amplify_delta(phases: Sequence[DPSGDPhase], epsilon: float, sampling: str) -> Guarantee:
    """The least δ (on a log scale, to 1e-9 relative, rounded up) whose amplify+compose ε is
    at most ``epsilon``: ε(δ) falls as δ grows, so the search keeps δ_hi with ε(δ_hi) ≤ ε."""

    def gap(log_d: float) -> float:
        return float(_amplify_epsilon(phases, math.exp(log_d), sampling).epsilon) - epsilon

    hi = math.log1p(-1e-12)  # δ just below 1
    if gap(hi) > 0.0:
        return Guarantee(epsilon, 1.0, "upper bound", _AMPLIFY_RULE)
    lo = math.log(1e-300)
    if gap(lo) <= 0.0:
        return Guarantee(epsilon, 1e-300, "upper bound", _AMPLIFY_RULE)
    found = optimize.brentq(gap, lo, hi, xtol=1e-12, rtol=1e-10)
    d = math.exp(found) * (1.0 + 1e-9)
    for _ in range(60):  # step up until it is surely enough
        if gap(math.log(d)) <= 0.0:
            break
        d = min(1.0, d * (1.0 + 1e-6))
    return Guarantee(epsilon, d, "upper bound", _AMPLIFY_RULE)


#: δ at ε per accountant: (live phases, ε, sampling, precision) → Guarantee.
DELTA_OF: dict[str, EpsilonOf] = {
    "pld": _pld_delta,
    "rdp": _certified_only(_rdp_delta),
    "gdp-clt": _certified_only(_clt_delta),
    "amplify+compose": _certified_only(_amplify_delta),
}
