"""DP-SGD runs with a schedule: phases of (σ, q, steps), and their (ε, δ) under each accountant.

A *phase* is a run of consecutive steps with the same noise multiplier σ and sampling rate q
(each step a subsampled Gaussian mechanism; Abadi et al. 2016,
https://arxiv.org/abs/1607.00133). A schedule — a warm-up at lower noise, a decaying noise
multiplier, a change of batch size — is a list of phases, and so is the history of a training
loop (:class:`~approxdp.accounting.dpsgd.training.TrainingAccountant`).

Accountants of a schedule (:func:`phases_epsilon`, :func:`phases_delta`):

- ``"pld"`` (default): certified and tight. The phases compose as one PLD history, each
  distinct (σ, q) discretized once and raised to its step count by FFT
  (:func:`~approxdp.accounting.pld_epsilon`; Koskela et al. 2021,
  https://arxiv.org/abs/2006.07134); one phase goes through
  :func:`~approxdp.accounting.dpsgd_epsilon` (closed forms for T = 1 and q = 1).
- ``"rdp"``: certified, looser. RDP adds up over steps (Mironov, Talwar, Zhang 2019,
  https://arxiv.org/abs/1908.10530), converted by Balle et al. 2020
  (https://arxiv.org/abs/1905.09982, Thm 21).
- ``"gdp-clt"``: an approximation (may be below the true ε): μ² adds up over steps (Bu, Dong,
  Long, Su 2020, https://arxiv.org/abs/1911.11607, §3).

Sampling as in :func:`~approxdp.accounting.dpsgd_epsilon`: ``"poisson"`` (add/remove
neighbours) or ``"without-replacement"`` (substitution neighbours, sensitivity 2C; Zhu, Dong,
Wang 2022, https://arxiv.org/abs/2106.08567, Thm 10).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from approxdp._validation import check_interval, check_probability
from approxdp.accounting.dpsgd.accountants import dpsgd_epsilon
from approxdp.accounting.dpsgd.gdp_clt import gdp_clt_mu, gdp_to_delta, gdp_to_epsilon
from approxdp.accounting.guarantees import Guarantee, Kind
from approxdp.accounting.pld.accounting import DEFAULT_PRECISION, pld_delta, pld_epsilon
from approxdp.errors import InvalidParameterError, ParameterTypeError, UnknownMethodError
from approxdp.events import SAMPLINGS, GaussianEvent, PrivacyEvent, SubsampledEvent

__all__ = [
    "MAX_STEPS",
    "SCHEDULE_ACCOUNTANTS",
    "Phase",
    "check_phases",
    "phase_events",
    "phases_delta",
    "phases_epsilon",
]

#: The accountants of a schedule: ``"pld"`` (certified, tight; default), ``"rdp"``
#: (certified, looser), ``"gdp-clt"`` (an approximation that may be below the true ε).
SCHEDULE_ACCOUNTANTS: Final = ("pld", "rdp", "gdp-clt")
#: The most steps a run may hold (as :func:`~approxdp.accounting.dpsgd_epsilon`).
MAX_STEPS: Final = 10**12

_CLT_RULE: Final = (
    "GDP central-limit approximation, μ² summed over the phases (Bu, Dong, Long, Su 2020, "
    "arXiv:1911.11607; can under-report epsilon)"
)
_RDP_RULE: Final = (
    "Rényi DP of the subsampled Gaussian summed over the phases (Mironov, Talwar, Zhang 2019), "
    "converted by Balle et al. 2020 Thm 21"
)


def check_sigma(value: Any, name: str = "noise_multiplier") -> float:
    """σ in (0, ∞] as a float, or a typed error naming ``name``."""
    arr = check_interval(name, value, 0.0, math.inf, low_open=True)
    if arr.ndim != 0:
        raise ParameterTypeError(
            f"{name} must be a single number, got an array of shape {arr.shape}"
        )
    return float(arr)


def check_rate(value: Any, name: str = "sample_rate") -> float:
    """q in (0, 1] as a float, or a typed error naming ``name``."""
    arr = check_interval(name, value, 0.0, 1.0, low_open=True)
    if arr.ndim != 0:
        raise ParameterTypeError(
            f"{name} must be a single number, got an array of shape {arr.shape}"
        )
    return float(arr)


def check_count(value: Any, name: str = "steps") -> int:
    """An integer number of steps in [1, 1e12], or a typed error naming ``name``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(
            f"{name} must be an integer in [1, 1e12], got {type(value).__name__} {value!r}"[:200]
        )
    if not isinstance(value, numbers.Integral):
        f = float(value)
        if not (math.isfinite(f) and f.is_integer()):
            raise InvalidParameterError(
                f"{name} must be an integer in [1, 1e12], got {name}={value!r}"
            )
        value = int(f)
    n = int(value)
    if not 1 <= n <= MAX_STEPS:
        raise InvalidParameterError(f"{name} must be an integer in [1, 1e12], got {name}={n}")
    return n


def check_sampling(sampling: Any) -> str:
    """``"poisson"`` or ``"without-replacement"``, or an UnknownMethodError."""
    if sampling not in SAMPLINGS:
        raise UnknownMethodError(f"sampling must be one of {SAMPLINGS}, got sampling={sampling!r}")
    return str(sampling)


def check_precision(precision: Any) -> float:
    """The PLD's ``precision`` in [1e-6, 0.1] (checked by the PLD accountant itself)."""
    pld_epsilon([], 0.5, precision=precision)
    return float(precision)


@dataclass(frozen=True, slots=True)
class Phase:
    """``steps`` consecutive DP-SGD steps with noise multiplier σ and sampling rate q.

    Attributes:
        noise_multiplier: σ in (0, ∞] (noise std over the clipping norm; ∞: no privacy cost).
        sample_rate: q in (0, 1].
        steps: the number of steps, an integer in [1, 1e12].
    """

    noise_multiplier: float
    sample_rate: float
    steps: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", check_sigma(self.noise_multiplier))
        object.__setattr__(self, "sample_rate", check_rate(self.sample_rate))
        object.__setattr__(self, "steps", check_count(self.steps))

    def as_tuple(self) -> tuple[float, float, int]:
        """``(noise_multiplier, sample_rate, steps)``: one entry of Opacus's ``history``."""
        return (self.noise_multiplier, self.sample_rate, self.steps)


def _as_phase(item: Any, where: str) -> Phase:
    if isinstance(item, Phase):
        return item
    if isinstance(item, Mapping):
        try:
            return Phase(item["noise_multiplier"], item["sample_rate"], item["steps"])
        except KeyError as exc:
            raise InvalidParameterError(
                f"{where} must have noise_multiplier, sample_rate and steps; "
                f"missing {exc.args[0]!r}"
            ) from None
    if isinstance(item, Sequence) and not isinstance(item, str | bytes) and len(item) == 3:
        return Phase(item[0], item[1], item[2])
    raise ParameterTypeError(
        f"{where} must be a Phase or a (noise_multiplier, sample_rate, steps) triple, "
        f"got {item!r}"[:200]
    )


def check_phases(phases: Any, name: str = "phases") -> list[Phase]:
    """``phases`` (Phase objects, (σ, q, steps) triples or mappings with those keys) as a
    list of :class:`Phase`, at most 1e12 steps in all, or a typed error naming the entry."""
    if isinstance(phases, str | bytes | Mapping) or not isinstance(phases, Iterable):
        raise ParameterTypeError(
            f"{name} must be a sequence of (noise_multiplier, sample_rate, steps) triples, "
            f"got {type(phases).__name__}"
        )
    out = [_as_phase(item, f"{name}[{i}]") for i, item in enumerate(phases)]
    total = sum(p.steps for p in out)
    if total > MAX_STEPS:
        raise InvalidParameterError(f"{name} hold {total} steps in all; at most 1e12 are accounted")
    return out


def phase_events(
    phases: Iterable[Phase], sampling: str = "poisson"
) -> list[tuple[PrivacyEvent, int]]:
    """The PLD history of a run: one (event, steps) pair per phase.

    A step is ``SubsampledEvent(GaussianEvent(σ, Δ), q)`` with Δ = 1 (Poisson, add/remove) or
    Δ = 2 (without replacement, substitution: one clipped gradient replaced by another); with
    q = 1 it is the plain Gaussian, which the accountant composes exactly with the others
    (Zhao et al. 2019, https://arxiv.org/abs/1911.12060, Lemma 15).
    """
    sens = 2.0 if check_sampling(sampling) == "without-replacement" else 1.0
    items: list[tuple[PrivacyEvent, int]] = []
    for p in phases:
        gauss = GaussianEvent(sigma=p.noise_multiplier, sensitivity=sens)
        event: PrivacyEvent = (
            gauss if p.sample_rate == 1.0
            else SubsampledEvent(gauss, p.sample_rate, sampling=sampling)
        )
        items.append((event, p.steps))
    return items


def check_accountant(name: Any) -> str:
    """One of :data:`SCHEDULE_ACCOUNTANTS`, or an UnknownMethodError."""
    if name not in SCHEDULE_ACCOUNTANTS:
        raise UnknownMethodError(
            f"accountant must be one of {SCHEDULE_ACCOUNTANTS}, got accountant={name!r}"
        )
    return str(name)


def _clt_mu(phases: Sequence[Phase], sampling: str) -> float:
    # substitution neighbours move the clipped sum by 2C: the CLT at σ/2
    scale = 2.0 if sampling == "without-replacement" else 1.0
    return math.sqrt(sum(
        gdp_clt_mu(p.noise_multiplier / scale, p.sample_rate, p.steps) ** 2 for p in phases
    ))


def _rdp_total(phases: Sequence[Phase], sampling: str) -> tuple[npt.NDArray[np.float64],
                                                                 npt.NDArray[np.float64]]:
    """(orders, RDP of the whole run at each order): T times each step's, summed."""
    from approxdp.accounting.rdp.subsampled_gaussian import (
        DEFAULT_RDP_ORDERS,
        rdp_subsampled_gaussian,
    )
    from approxdp.accounting.rdp.without_replacement import (
        rdp_sampled_without_replacement_gaussian,
    )

    orders = np.asarray(DEFAULT_RDP_ORDERS, dtype=np.float64)
    total = np.zeros_like(orders)
    for p in phases:
        if sampling == "without-replacement":  # σ relative to the substitution sensitivity 2C
            one = rdp_sampled_without_replacement_gaussian(
                p.noise_multiplier / 2.0, p.sample_rate, orders)
        else:
            one = rdp_subsampled_gaussian(p.noise_multiplier, p.sample_rate, orders)
        with np.errstate(over="ignore", invalid="ignore"):
            total = total + np.where(one == 0.0, 0.0, p.steps * np.asarray(one))
    return orders, total


def epsilon_at(
    phases: Sequence[Phase], delta: float, sampling: str, accountant: str, precision: float
) -> Guarantee:
    """ε of checked phases at one checked δ (see :func:`phases_epsilon`)."""
    if not phases:
        return Guarantee(0.0, delta, "exact", "no steps", bracket=(0.0, 0.0))
    if accountant == "gdp-clt":
        return Guarantee(gdp_to_epsilon(_clt_mu(phases, sampling), delta), delta,
                         "approximation", _CLT_RULE)
    if accountant == "rdp":
        from approxdp.accounting.rdp.conversion import rdp_dpsgd_epsilon, rdp_to_epsilon

        if len(phases) == 1:  # one phase: the order search is refined between grid points
            p = phases[0]
            return rdp_dpsgd_epsilon(p.noise_multiplier, p.sample_rate, p.steps, delta,
                                     sampling="poisson" if sampling == "poisson"
                                     else "without-replacement")
        orders, rdp = _rdp_total(phases, sampling)
        eps, order = rdp_to_epsilon(rdp, orders, delta)
        return Guarantee(eps, delta, "upper bound", f"{_RDP_RULE}, order {order:g}")
    if len(phases) == 1:
        p = phases[0]
        return dpsgd_epsilon(
            noise_multiplier=p.noise_multiplier, sample_rate=p.sample_rate, steps=p.steps,
            delta=delta, sampling=sampling, precision=precision,
        )
    return pld_epsilon(phase_events(phases, sampling), delta, precision=precision)


def delta_at(
    phases: Sequence[Phase], epsilon: float, sampling: str, accountant: str, precision: float
) -> Guarantee:
    """δ of checked phases at one checked ε (see :func:`phases_delta`)."""
    if not phases:
        return Guarantee(epsilon, 0.0, "exact", "no steps", bracket=(0.0, 0.0))
    if accountant == "gdp-clt":
        return Guarantee(epsilon, gdp_to_delta(_clt_mu(phases, sampling), epsilon),
                         "approximation", _CLT_RULE)
    if accountant == "rdp":
        from approxdp.accounting.rdp.conversion import rdp_dpsgd_delta, rdp_to_delta

        if len(phases) == 1:
            p = phases[0]
            return rdp_dpsgd_delta(p.noise_multiplier, p.sample_rate, p.steps, epsilon,
                                   sampling="poisson" if sampling == "poisson"
                                   else "without-replacement")
        orders, rdp = _rdp_total(phases, sampling)
        d, order = rdp_to_delta(rdp, orders, epsilon)
        return Guarantee(epsilon, d, "upper bound", f"{_RDP_RULE}, order {order:g}")
    return pld_delta(phase_events(phases, sampling), epsilon, precision=precision)


def over_targets(targets: npt.NDArray[np.float64], one: Callable[[float], Guarantee]
                 ) -> Guarantee:
    """``one`` at each checked target: its Guarantee for a 0-d array; for an array, one
    Guarantee of arrays of that shape (the loosest kind of the elements, no bracket)."""
    if targets.ndim == 0:
        return one(float(targets))
    results = [one(float(t)) for t in targets.ravel()]
    eps = np.array([float(g.epsilon) for g in results]).reshape(targets.shape)
    dlt = np.array([float(g.delta) for g in results]).reshape(targets.shape)
    kinds = {g.kind for g in results}
    kind: Kind = ("approximation" if "approximation" in kinds
                  else "upper bound" if "upper bound" in kinds else "exact")
    return Guarantee(eps, dlt, kind, "; ".join(dict.fromkeys(g.rule for g in results)))


def phases_epsilon(
    phases: Any,
    delta: Any,
    *,
    sampling: str = "poisson",
    accountant: str = "pld",
    precision: float = DEFAULT_PRECISION,
) -> Guarantee:
    """ε at δ of a DP-SGD run given as phases of (σ, q, steps).

    Args:
        phases: :class:`Phase` objects or (noise_multiplier, sample_rate, steps) triples.
        delta: δ in (0, 1), or an array of them.
        sampling: ``"poisson"`` (default) or ``"without-replacement"``.
        accountant: ``"pld"`` (default), ``"rdp"`` or ``"gdp-clt"`` (see the module).
        precision: PLD only: target relative excess of ε over the true value.

    Returns:
        A labelled :class:`~approxdp.accounting.Guarantee`: for one δ the PLD's carries a
        certified ``bracket``; for an array of δ, ``epsilon`` and ``delta`` are arrays.

    Example:
        >>> g = phases_epsilon([(1.1, 256 / 60000, 10000), (0.8, 256 / 60000, 2000)], 1e-5)
        >>> round(g.epsilon, 2), g.kind
        (2.65, 'upper bound')
    """
    checked = check_phases(phases)
    s, a, p = check_sampling(sampling), check_accountant(accountant), check_precision(precision)
    deltas = check_probability("delta", delta)
    return over_targets(deltas, lambda d: epsilon_at(checked, d, s, a, p))


def phases_delta(
    phases: Any,
    epsilon: Any,
    *,
    sampling: str = "poisson",
    accountant: str = "pld",
    precision: float = DEFAULT_PRECISION,
) -> Guarantee:
    """δ at ε (ε ≥ 0, or an array) of a DP-SGD run given as phases; see
    :func:`phases_epsilon`."""
    checked = check_phases(phases)
    s, a, p = check_sampling(sampling), check_accountant(accountant), check_precision(precision)
    eps = check_interval("epsilon", epsilon, 0.0, math.inf, high_open=True)
    return over_targets(eps, lambda e: delta_at(checked, e, s, a, p))
