"""Phases of a DP-SGD run: (noise multiplier σ, sample rate q, steps T), and their validation.

A training run with a schedule (warm-up at one batch size, then another noise multiplier, …)
is a sequence of phases; its privacy is the composition of every step of every phase (DP-SGD's
steps compose adaptively: Abadi et al. 2016, https://arxiv.org/abs/1607.00133). One phase is
the common case: :func:`~approxdp.accounting.dpsgd.accountants.dpsgd_epsilon` takes its three
numbers directly.

Every checker takes one scalar and says, on failure, which parameter of which phase was wrong,
its value and what is allowed (arrays where one number is meant are refused by name, never
NumPy's bare ``TypeError``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from approxdp._validation import check_parameter
from approxdp.errors import InvalidParameterError, ParameterTypeError, UnknownMethodError
from approxdp.events import SAMPLINGS

__all__ = [
    "MAX_STEPS",
    "DPSGDPhase",
    "check_noise_multiplier",
    "check_phases",
    "check_sample_rate",
    "check_sampling",
    "check_steps",
]

#: The most steps a run (all phases together) may have.
MAX_STEPS = 10**12


def _scalar(name: str, value: Any) -> Any:
    """``value`` if it is one number (a 0-d array counts), else a typed error naming it."""
    if isinstance(value, np.ndarray) and value.ndim != 0:
        raise InvalidParameterError(
            f"{name} must be a single number, got an array of shape {value.shape}"
        )
    if isinstance(value, list | tuple):
        raise ParameterTypeError(
            f"{name} must be a single number, got a {type(value).__name__} of {len(value)}"
        )
    return value


def check_noise_multiplier(value: Any, name: str = "noise_multiplier") -> float:
    """σ in (0, ∞] (``inf``: no privacy loss at all)."""
    return float(check_parameter(name, _scalar(name, value), "sigma"))


def check_sample_rate(value: Any, name: str = "sample_rate") -> float:
    """q in (0, 1]."""
    return float(check_parameter(name, _scalar(name, value), "sample_rate"))


def check_steps(value: Any, name: str = "steps") -> int:
    """T, an integer in [1, 10^12] (an integral float such as ``1e6`` is accepted)."""
    value = _scalar(name, value)
    if isinstance(value, np.ndarray):
        value = value[()]
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(
            f"{name} must be an integer >= 1, got {type(value).__name__} {value!r}"[:200]
        )
    if not isinstance(value, numbers.Integral) and not (
        math.isfinite(float(value)) and float(value).is_integer()
    ):
        raise InvalidParameterError(f"{name} must be an integer >= 1, got {name}={value!r}")
    n = int(value) if isinstance(value, numbers.Integral) else int(float(value))
    if not 1 <= n <= MAX_STEPS:
        raise InvalidParameterError(
            f"{name} must be an integer in [1, {MAX_STEPS:.0e}], got {name}={n}"
        )
    return n


def check_sampling(sampling: Any) -> str:
    """``"poisson"`` or ``"without-replacement"``."""
    if not isinstance(sampling, str) or sampling not in SAMPLINGS:
        raise UnknownMethodError(f"sampling must be one of {SAMPLINGS}, got sampling={sampling!r}")
    return sampling


@dataclass(frozen=True, slots=True)
class DPSGDPhase:
    """``steps`` steps of DP-SGD at one noise multiplier and one sample rate.

    Attributes:
        noise_multiplier: σ = noise standard deviation / clipping norm, in (0, ∞].
        sample_rate: q = batch size / dataset size, in (0, 1].
        steps: T ≥ 1.

    Example:
        >>> DPSGDPhase(1.1, 256 / 60000, 14063).steps
        14063
    """

    noise_multiplier: float
    sample_rate: float
    steps: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", check_noise_multiplier(self.noise_multiplier))
        object.__setattr__(self, "sample_rate", check_sample_rate(self.sample_rate))
        object.__setattr__(self, "steps", check_steps(self.steps))


def _phase(i: int, item: Any) -> DPSGDPhase:
    if isinstance(item, DPSGDPhase):
        return item
    if not (isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 3):
        raise ParameterTypeError(
            f"phases[{i}] must be a DPSGDPhase or a (noise_multiplier, sample_rate, steps) "
            f"triple, got {item!r}"[:200]
        )
    sigma, q, t = item
    return DPSGDPhase(
        check_noise_multiplier(sigma, f"phases[{i}].noise_multiplier"),
        check_sample_rate(q, f"phases[{i}].sample_rate"),
        check_steps(t, f"phases[{i}].steps"),
    )


def check_phases(phases: Any) -> tuple[DPSGDPhase, ...]:
    """A non-empty sequence of phases (:class:`DPSGDPhase` or (σ, q, T) triples, e.g. Opacus's
    ``accountant.history``), with at most 10^12 steps in all."""
    if isinstance(phases, DPSGDPhase):
        phases = [phases]
    if not isinstance(phases, Iterable) or isinstance(phases, str | bytes):
        raise ParameterTypeError(
            "phases must be a sequence of (noise_multiplier, sample_rate, steps) phases, "
            f"got {type(phases).__name__}"
        )
    out = tuple(_phase(i, item) for i, item in enumerate(phases))
    if not out:
        raise InvalidParameterError("phases must hold at least one phase, got none")
    total = sum(p.steps for p in out)
    if total > MAX_STEPS:
        raise InvalidParameterError(
            f"phases must have at most {MAX_STEPS:.0e} steps in all, got {total}"
        )
    return out
