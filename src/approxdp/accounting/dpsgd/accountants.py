"""Accounting for DP-SGD: the ε of a training run, and the noise multiplier for a target ε
(:func:`calibrate_dpsgd`: :mod:`approxdp.accounting.dpsgd.calibration`, re-exported here).

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

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from approxdp._validation import check_parameter
from approxdp.accounting.dpsgd.bounds import (
    DELTA_OF,
    EPSILON_OF,
    NO_LOSS_RULE,
    TV_RULE,
    live_phases,
    total_variation,
)
from approxdp.accounting.dpsgd.calibration import calibrate_dpsgd
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
)
from approxdp.accounting.registry import accounting_rule, rule_names
from approxdp.errors import UnknownMethodError

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
