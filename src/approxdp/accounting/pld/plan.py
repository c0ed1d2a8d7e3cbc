"""A history as the PLD accountant composes it: per neighbouring direction, (loss source,
count) pairs, with every Gaussian event merged into one Gaussian with μ = (Σ Δᵢ²/σᵢ²)^(1/2),
which is exact (Zhao et al. 2019, https://arxiv.org/abs/1911.12060, Lemma 15); and the checks
of the accountant's inputs (items, δ, grid step, precision).

The "remove" and the "add" direction of add/remove neighbours are kept apart (Zhu, Dong, Wang
2022, https://arxiv.org/abs/2106.08567, Sec. 5): a history composes each separately and δ(ε)
is the larger of the two.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from approxdp._validation import check_parameter
from approxdp.accounting.pld.event_losses import event_losses, gaussian_source
from approxdp.accounting.pld.privacy_loss import LossSource
from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.events import PrivacyEvent

__all__ = ["DEFAULT_PRECISION", "check_precision"]

DEFAULT_PRECISION = 1e-3


@dataclass(frozen=True, slots=True)
class _Plan:
    """A history ready to compose: per direction, (source, count) pairs; the merged Gaussian."""

    remove: tuple[tuple[LossSource, int], ...]
    add: tuple[tuple[LossSource, int], ...]
    steps: int


_MAX_COUNT = 10**15


def _check_items(items: object) -> list[tuple[PrivacyEvent, int]]:
    """``items`` as (event, count) pairs with integer counts in [1, 1e15], or a typed error."""
    if not isinstance(items, Sequence | Iterable) or isinstance(items, str | bytes):
        raise ParameterTypeError(
            f"items must be a sequence of (event, count) pairs, got {type(items).__name__}"
        )
    out: list[tuple[PrivacyEvent, int]] = []
    for i, item in enumerate(items):
        if not (isinstance(item, tuple | list) and len(item) == 2):
            raise ParameterTypeError(
                f"items[{i}] must be an (event, count) pair, got {item!r}"[:200]
            )
        event, count = item
        if not isinstance(event, PrivacyEvent):
            raise ParameterTypeError(
                f"items[{i}][0] must be a PrivacyEvent, got {type(event).__name__}"
            )
        if isinstance(count, bool) or not isinstance(count, numbers.Integral):
            raise ParameterTypeError(
                f"items[{i}] count must be an integer in [1, 1e15], got {count!r}"
            )
        if not 1 <= int(count) <= _MAX_COUNT:
            raise InvalidParameterError(
                f"items[{i}] count must be an integer in [1, 1e15], got count={count}"
            )
        out.append((event, int(count)))
    return out


def _check_step(h: object) -> float | None:
    if h is None:
        return None
    if isinstance(h, bool) or not isinstance(h, numbers.Real):
        raise ParameterTypeError(f"h must be a positive number or None, got {h!r}")
    if not (math.isfinite(float(h)) and float(h) > 0.0):
        raise InvalidParameterError(f"h must be a finite grid step > 0, got h={h}")
    return float(h)


def _plan(items: Sequence[tuple[PrivacyEvent, int]]) -> _Plan:
    rho = 0.0
    rem: dict[LossSource, int] = {}
    add: dict[LossSource, int] = {}
    steps = 0
    for event, count in _check_items(items):
        for pair in event_losses(event):
            steps += count
            if pair.remove is None or pair.add is None:
                rho += count * pair.gaussian_rho
                continue
            rem[pair.remove] = rem.get(pair.remove, 0) + count
            add[pair.add] = add.get(pair.add, 0) + count
    if rho > 0.0:
        g = gaussian_source(math.nextafter(math.sqrt(rho), math.inf))
        rem[g] = rem.get(g, 0) + 1
        add[g] = add.get(g, 0) + 1
    return _Plan(tuple(rem.items()), tuple(add.items()), steps)


def _directions(plan: _Plan) -> tuple[tuple[tuple[LossSource, int], ...], ...]:
    """The directions to compose: one when every event is symmetric (both are the same)."""
    if set(plan.remove) == set(plan.add):
        return (plan.remove,)
    return (plan.remove, plan.add)


def _check_delta(delta: object) -> float:
    """δ in [1e-300, 1): below, δ's own tail terms (1e-4 δ) underflow."""
    value = float(check_parameter("delta", delta))
    if value < 1e-300:
        raise InvalidParameterError(f"delta must be in [1e-300, 1), got delta={value:.6g}")
    return value


def check_precision(precision: float) -> float:
    """``precision`` in [1e-6, 0.1], or a typed error."""
    if not (isinstance(precision, (int, float)) and 1e-6 <= precision <= 0.1):
        raise InvalidParameterError(
            f"precision must be in [1e-06, 0.1], got precision={precision!r}"
        )
    return float(precision)
