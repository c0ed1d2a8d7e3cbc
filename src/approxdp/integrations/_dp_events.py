"""Conversion between Google dp_accounting's ``DpEvent`` trees and approxdp's events, for
:mod:`approxdp.integrations.dp_accounting` (which documents it: :func:`from_dp_event`,
:func:`to_dp_event`, the sensitivity conventions). Internal: import from there."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from approxdp.errors import (
    InvalidParameterError,
    MissingDependencyError,
    ParameterTypeError,
)
from approxdp.events import (
    ComposedEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    SubsampledEvent,
)

try:
    # re-exported (``as`` the same name) for the façade, integrations.dp_accounting
    import dp_accounting as dp_accounting
    from dp_accounting import dp_event as _ev
    from dp_accounting.privacy_accountant import NeighboringRelation as NeighboringRelation
    from dp_accounting.privacy_accountant import UnsupportedEventError
except ImportError as _exc:  # pragma: no cover - depends on the environment
    raise MissingDependencyError(
        "approxdp.integrations.dp_accounting needs Google's dp-accounting: "
        "pip install 'approxdp[dp-accounting]'"
    ) from _exc
__all__ = [
    "Items",
    "UnsupportedDpEventError",
    "from_dp_event",
    "to_dp_event",
]

Items = list[tuple[PrivacyEvent, int]]
_ADD_REMOVE = NeighboringRelation.ADD_OR_REMOVE_ONE
_REPLACE_ONE = NeighboringRelation.REPLACE_ONE
_REPLACE_SPECIAL = NeighboringRelation.REPLACE_SPECIAL


class UnsupportedDpEventError(UnsupportedEventError, InvalidParameterError):  # type: ignore[misc]
    """A ``DpEvent`` approxdp cannot account (under this neighbouring relation).

    Also a ``dp_accounting.UnsupportedEventError`` (what dp_accounting's accountants raise) and
    a ``ValueError``. ``event`` is the offending sub-event.
    """

    def __init__(self, message: str, event: Any = None) -> None:
        super().__init__(message)
        self.event = event


@dataclass(frozen=True, slots=True)
class _Converted:
    """A DpEvent as approxdp items, or the finding that it is not private at all."""

    items: Items
    non_private: bool = False


_NOTHING = _Converted([])


def _one(event: PrivacyEvent, count: int) -> _Converted:
    """``event`` ``count`` times (nothing for a count of 0: ``supports`` checks with 0)."""
    return _Converted([(event, count)] if count else [])


def _not_private(count: int) -> _Converted:
    return _Converted([], non_private=count > 0)


class _UnsupportedError(Exception):
    def __init__(self, event: Any, reason: str) -> None:
        super().__init__(reason)
        self.event = event
        self.reason = reason


def _check_relation(relation: Any) -> NeighboringRelation:
    if not isinstance(relation, NeighboringRelation):
        raise ParameterTypeError(
            "neighboring_relation must be a dp_accounting.NeighboringRelation, got "
            f"{relation!r}"[:200]
        )
    return relation


def _check_replace_sensitivity(value: Any) -> float:
    if value not in (1.0, 2.0) or isinstance(value, bool):
        raise InvalidParameterError(
            "replace_one_sensitivity must be 2.0 (a replaced record moves a sum of "
            "contributions of norm <= C by 2C; dp_accounting's PLD) or 1.0 (dp_accounting's "
            f"RDP convention), got replace_one_sensitivity={value!r}"
        )
    return float(value)


def _scalar(name: str, value: Any) -> float:
    """A single number (its range is checked by the accountant that uses it)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(f"{name} must be a single number, got {value!r}"[:200])
    return float(value)


def _check_count(count: Any) -> int:
    if isinstance(count, bool) or not isinstance(count, numbers.Integral) or int(count) < 0:
        raise ParameterTypeError(f"count must be an integer >= 0, got {count!r}"[:200])
    return int(count)


def _number(event: Any, field: str, *, low: float = 0.0) -> float:
    value = getattr(event, field)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value) or (
        float(value) < low
    ):
        raise _UnsupportedError(event, f"{field} must be a number >= {low:g}, got {value!r}")
    return float(value)


def _gaussian_noise(event: Any) -> float | None:
    """The effective noise multiplier of a Gaussian, or of Gaussians composed on the same
    data ((Σ σᵢ⁻²)^(-1/2): one Gaussian, exactly; Zhao et al. 2019,
    https://arxiv.org/abs/1911.12060, Lemma 15); None for anything else."""
    if isinstance(event, _ev.GaussianDpEvent):
        return _number(event, "noise_multiplier")
    if isinstance(event, _ev.SelfComposedDpEvent | _ev.ComposedDpEvent):
        parts = (
            [(event.event, _check_tree_count(event))]
            if isinstance(event, _ev.SelfComposedDpEvent)
            else [(e, 1) for e in event.events]
        )
        inv = 0.0
        for inner, count in parts:
            sigma = _gaussian_noise(inner)
            if sigma is None:
                return None
            inv += count * (math.inf if sigma == 0.0 else sigma**-2.0)
        return math.inf if inv == 0.0 else (0.0 if math.isinf(inv) else inv**-0.5)
    return None


def _check_tree_count(event: Any) -> int:
    count = event.count
    if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
        raise _UnsupportedError(event, f"count must be an integer >= 0, got {count!r}")
    return int(count)


def _convert(event: Any, count: int, relation: NeighboringRelation, sens2: float) -> _Converted:
    """``event`` repeated ``count`` times, as approxdp (event, count) items."""
    if isinstance(event, _ev.NoOpDpEvent):
        return _NOTHING
    if isinstance(event, _ev.NonPrivateDpEvent):
        return _not_private(count)
    if isinstance(event, _ev.SelfComposedDpEvent):
        return _convert(event.event, count * _check_tree_count(event), relation, sens2)
    if isinstance(event, _ev.ComposedDpEvent):
        items: Items = []
        non_private = False
        for inner in event.events:
            part = _convert(inner, count, relation, sens2)
            items.extend(part.items)
            non_private |= part.non_private
        return _Converted(items, non_private)
    if isinstance(event, _ev.GaussianDpEvent):
        sigma = _number(event, "noise_multiplier")
        if sigma == 0.0:
            return _not_private(count)
        sens = sens2 if relation is _REPLACE_ONE else 1.0
        return _one(GaussianEvent(sigma=sigma, sensitivity=sens), count)
    if isinstance(event, _ev.LaplaceDpEvent):
        scale = _number(event, "noise_multiplier")
        if scale == 0.0:
            return _not_private(count)
        sens = 2.0 if relation is _REPLACE_ONE else 1.0  # ℓ1: a replaced record moves it 2C
        return _one(LaplaceEvent(scale=scale, sensitivity=sens), count)
    if isinstance(event, _ev.DiscreteLaplaceDpEvent):
        a = _number(event, "noise_parameter")
        sens_int = _number(event, "sensitivity")
        if not float(sens_int).is_integer():
            raise _UnsupportedError(event, f"sensitivity must be an integer, got {sens_int!r}")
        if sens_int == 0.0:
            return _NOTHING
        if a == 0.0 or math.isinf(a):
            return _not_private(count) if a == 0.0 else _NOTHING
        factor = 2.0 if relation is _REPLACE_ONE else 1.0
        # pure (a·Δ)-DP; exact for Δ = 1 (a two-valued loss), an upper bound above
        return _one(EpsilonDeltaEvent(epsilon=factor * a * sens_int, delta=0.0), count)
    if isinstance(event, _ev.RandomizedResponseDpEvent):
        return _randomized_response(event, count, relation)
    if isinstance(event, _ev.PoissonSampledDpEvent):
        return _poisson(event, count, relation)
    if isinstance(event, _ev.SampledWithoutReplacementDpEvent):
        return _without_replacement(event, count, relation, sens2)
    if isinstance(event, _ev.SingleEpochTreeAggregationDpEvent):
        return _tree(event, count, relation)
    raise _UnsupportedError(event, "approxdp has no privacy loss distribution for it")


def _randomized_response(event: Any, count: int, relation: NeighboringRelation) -> _Converted:
    """k-ary randomized response as pure ε-DP: the likelihood ratios of its output
    distributions (dp_accounting's ``RandomizedResponseDpEvent``) bound its loss; exact for
    k = 2 under ``REPLACE_ONE`` (a two-valued loss)."""
    p = _number(event, "noise_parameter")
    k = _number(event, "num_buckets", low=1.0)
    if p > 1.0 or not float(k).is_integer():
        raise _UnsupportedError(event, "needs noise_parameter in [0, 1] and an integer num_buckets")
    if relation is _ADD_REMOVE:
        raise _UnsupportedError(event, "randomized response is defined for REPLACE_ONE or "
                                  "REPLACE_SPECIAL neighbours")
    if k == 1 or p == 1.0:
        return _NOTHING
    if p == 0.0:
        return _not_private(count)
    if relation is _REPLACE_ONE:
        eps = math.log1p(k * (1.0 - p) / p)
    else:  # REPLACE_SPECIAL: against the uniform output of the special record
        eps = max(math.log(k * (1.0 - p) + p), -math.log(p))
    return _one(EpsilonDeltaEvent(epsilon=eps, delta=0.0), count)


def _sampled_inner(event: Any, inner: Any, sens: float) -> PrivacyEvent | None:
    """The approxdp event a sampling event applies to its batch; None: no privacy cost."""
    sigma = _gaussian_noise(inner)
    if sigma is not None:
        if math.isinf(sigma):
            return None
        if sigma == 0.0:
            raise _NonPrivateError
        return GaussianEvent(sigma=sigma, sensitivity=sens)
    if isinstance(inner, _ev.LaplaceDpEvent):
        scale = _number(inner, "noise_multiplier")
        if scale == 0.0:
            raise _NonPrivateError
        return LaplaceEvent(scale=scale, sensitivity=sens)
    if isinstance(inner, _ev.NoOpDpEvent):
        return None
    if isinstance(inner, _ev.NonPrivateDpEvent):
        raise _NonPrivateError
    raise _UnsupportedError(
        event, f"the sampled event must be a GaussianDpEvent (or Gaussians composed), a "
               f"LaplaceDpEvent or a NoOpDpEvent, got {type(inner).__name__}"
    )


class _NonPrivateError(Exception):
    pass


def _poisson(event: Any, count: int, relation: NeighboringRelation) -> _Converted:
    if relation is _REPLACE_ONE:
        raise _UnsupportedError(event, "Poisson sampling is accounted for ADD_OR_REMOVE_ONE or "
                                  "REPLACE_SPECIAL neighbours (use "
                                  "SampledWithoutReplacementDpEvent with REPLACE_ONE)")
    q = _number(event, "sampling_probability")
    if q > 1.0:
        raise _UnsupportedError(event, f"sampling_probability must be in [0, 1], got {q!r}")
    try:
        inner = _sampled_inner(event, event.event, 1.0)
    except _NonPrivateError:
        return _not_private(count) if q > 0.0 else _NOTHING
    if inner is None or q == 0.0:
        return _NOTHING
    return _one(inner if q == 1.0 else SubsampledEvent(inner, q), count)


def _without_replacement(
    event: Any, count: int, relation: NeighboringRelation, sens2: float
) -> _Converted:
    if relation is not _REPLACE_ONE:
        raise _UnsupportedError(event, "sampling without replacement is accounted for REPLACE_ONE "
                                  "neighbours only (the dataset size is public)")
    n = _number(event, "source_dataset_size", low=1.0)
    m = _number(event, "sample_size")
    if m > n or not (float(n).is_integer() and float(m).is_integer()):
        raise _UnsupportedError(
            event, "needs integer sizes with sample_size <= source_dataset_size")
    # Laplace: ℓ1 sensitivity of a replacement is 2C whatever the Gaussian convention
    inner_is_laplace = isinstance(event.event, _ev.LaplaceDpEvent)
    try:
        inner = _sampled_inner(event, event.event, 2.0 if inner_is_laplace else sens2)
    except _NonPrivateError:
        return _not_private(count) if m > 0.0 else _NOTHING
    if inner is None or m == 0.0:
        return _NOTHING
    q = m / n
    return _one(inner if q == 1.0 else SubsampledEvent(inner, q, sampling="without-replacement"),
                count)


def _tree(event: Any, count: int, relation: NeighboringRelation) -> _Converted:
    """Tree aggregation (DP-FTRL), one epoch: each record reaches at most ⌈log2(n+1)⌉ nodes of
    each tree, so the release is one Gaussian with ℓ2-sensitivity sqrt(depth) (Kairouz et al.
    2021, https://arxiv.org/abs/2103.00039, App. D; dp_accounting's RDP is that Gaussian's)."""
    if relation is not _REPLACE_SPECIAL:
        raise _UnsupportedError(
            event, "tree aggregation is accounted for REPLACE_SPECIAL neighbours")
    sigma = _number(event, "noise_multiplier")
    steps = event.step_counts
    counts = [steps] if isinstance(steps, numbers.Real) else list(steps)
    if not counts or any(
        isinstance(c, bool) or not isinstance(c, numbers.Integral) or c < 0 for c in counts
    ):
        raise _UnsupportedError(event, "step_counts must be integers >= 0 (at least one)")
    depth = math.ceil(math.log2(float(max(counts)) + 1.0))
    if depth == 0 or math.isinf(sigma):
        return _NOTHING
    if sigma == 0.0:
        return _not_private(count)
    return _one(GaussianEvent(sigma=sigma, sensitivity=math.sqrt(depth)), count)


def _convert_checked(
    event: Any, count: int, relation: NeighboringRelation, sens2: float
) -> _Converted:
    if not isinstance(event, _ev.DpEvent):
        raise ParameterTypeError(f"event must be a dp_accounting DpEvent, got "
                                 f"{type(event).__name__}")
    try:
        return _convert(event, count, relation, sens2)
    except _UnsupportedError as exc:
        raise UnsupportedDpEventError(_unsupported_message(exc, event, relation),
                                      exc.event) from None


def _unsupported_message(exc: _UnsupportedError, event: Any, relation: NeighboringRelation) -> str:
    where = "" if exc.event is event else f" (inside {type(event).__name__})"
    return (f"{type(exc.event).__name__}{where} is not supported under "
            f"{relation.name} neighbours: {exc.reason}; the event: {exc.event!r}"[:400])


def from_dp_event(
    event: Any,
    neighboring_relation: NeighboringRelation = _ADD_REMOVE,
    *,
    replace_one_sensitivity: float = 2.0,
) -> Items:
    """A ``DpEvent`` as approxdp (event, count) pairs, for
    :func:`~approxdp.accounting.pld_epsilon` or a ledger.

    Gaussian → :class:`~approxdp.events.GaussianEvent` (σ = the noise multiplier, Δ = 1, or
    ``replace_one_sensitivity`` under ``REPLACE_ONE``); Laplace → ``LaplaceEvent``;
    Poisson-sampled / sampled-without-replacement → ``SubsampledEvent``; self-composed → a
    count; composed → several pairs; no-op → nothing; discrete Laplace and randomized response
    → their pure-ε ``EpsilonDeltaEvent``; single-epoch tree aggregation → one Gaussian.

    Raises:
        UnsupportedDpEventError: a (sub-)event approxdp cannot account, or a
            ``NonPrivateDpEvent`` (no approxdp event means "not private"); named in the
            message.
        ParameterTypeError: ``event`` is not a ``DpEvent``.
    """
    relation = _check_relation(neighboring_relation)
    sens2 = _check_replace_sensitivity(replace_one_sensitivity)
    out = _convert_checked(event, 1, relation, sens2)
    if out.non_private:
        raise UnsupportedDpEventError(
            f"{type(event).__name__} contains a non-private operation (NonPrivateDpEvent or a "
            "zero noise parameter): its epsilon is infinite and no approxdp event describes it",
            event,
        )
    return _merge(out.items)


def _merge(items: Iterable[tuple[PrivacyEvent, int]]) -> Items:
    merged: dict[PrivacyEvent, int] = {}
    for ev, c in items:
        merged[ev] = merged.get(ev, 0) + c
    return list(merged.items())


def to_dp_event(
    events: PrivacyEvent | Sequence[tuple[PrivacyEvent, int]],
    neighboring_relation: NeighboringRelation = _ADD_REMOVE,
    *,
    dataset_size: int | None = None,
    replace_one_sensitivity: float = 2.0,
) -> Any:
    """approxdp events as one ``DpEvent`` (the inverse of :func:`from_dp_event`).

    Args:
        events: one event, or (event, count) pairs (a count becomes a
            ``SelfComposedDpEvent``).
        neighboring_relation: the relation the ``DpEvent`` will be accounted under; under
            ``REPLACE_ONE`` a Gaussian's noise multiplier is σ·(replace_one_sensitivity)/Δ.
        dataset_size: n, needed for a ``SubsampledEvent`` without replacement (the batch is
            q·n, which must be an integer).
        replace_one_sensitivity: see the module's note on conventions.

    Raises:
        InvalidParameterError: an event with no ``DpEvent`` counterpart (an (ε, δ) event with
            δ > 0, a discrete Gaussian), a sampling that does not fit the relation, or a
            missing/inconsistent ``dataset_size``.
    """
    relation = _check_relation(neighboring_relation)
    sens2 = _check_replace_sensitivity(replace_one_sensitivity)
    if isinstance(events, PrivacyEvent):
        return _to_dp(events, relation, sens2, dataset_size)
    if isinstance(events, str | bytes) or not isinstance(events, Sequence):
        raise ParameterTypeError(
            f"events must be a PrivacyEvent or (event, count) pairs, got {type(events).__name__}"
        )
    parts = []
    for i, pair in enumerate(events):
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            raise ParameterTypeError(f"events[{i}] must be an (event, count) pair, "
                                     f"got {pair!r}"[:200])
        ev, c = pair
        if not isinstance(ev, PrivacyEvent):
            raise ParameterTypeError(f"events[{i}][0] must be a PrivacyEvent, "
                                     f"got {type(ev).__name__}")
        dp = _to_dp(ev, relation, sens2, dataset_size)
        c = _check_count(c)
        parts.append(dp if c == 1 else _ev.SelfComposedDpEvent(dp, c))
    return parts[0] if len(parts) == 1 else _ev.ComposedDpEvent(parts)


def _to_dp(ev: PrivacyEvent, relation: NeighboringRelation, sens2: float,
           dataset_size: int | None) -> Any:
    replace = relation is _REPLACE_ONE
    if isinstance(ev, GaussianEvent):
        if ev.sensitivity == 0.0 or math.isinf(ev.sigma):
            return _ev.NoOpDpEvent()
        return _ev.GaussianDpEvent(ev.sigma * (sens2 if replace else 1.0) / ev.sensitivity)
    if isinstance(ev, LaplaceEvent):
        if ev.sensitivity == 0.0 or math.isinf(ev.scale):
            return _ev.NoOpDpEvent()
        return _ev.LaplaceDpEvent(ev.scale * (2.0 if replace else 1.0) / ev.sensitivity)
    if isinstance(ev, ComposedEvent):
        return _ev.ComposedDpEvent([_to_dp(e, relation, sens2, dataset_size) for e in ev.events])
    if isinstance(ev, SubsampledEvent):
        return _subsampled_to_dp(ev, relation, sens2, dataset_size)
    raise InvalidParameterError(
        f"{type(ev).__name__} has no dp_accounting DpEvent counterpart; account it with "
        "approxdp directly (approxdp.accounting.pld_epsilon)"
    )


def _subsampled_to_dp(ev: SubsampledEvent, relation: NeighboringRelation, sens2: float,
                      dataset_size: int | None) -> Any:
    if ev.sampling == "poisson":
        if relation is _REPLACE_ONE:
            raise InvalidParameterError(
                "a Poisson-subsampled event is accounted under ADD_OR_REMOVE_ONE (or "
                "REPLACE_SPECIAL) neighbours, not REPLACE_ONE"
            )
        return _ev.PoissonSampledDpEvent(ev.q, _to_dp(ev.event, relation, sens2, dataset_size))
    if relation is not _REPLACE_ONE:
        raise InvalidParameterError(
            "a SubsampledEvent without replacement is accounted under REPLACE_ONE neighbours; "
            "pass neighboring_relation=NeighboringRelation.REPLACE_ONE"
        )
    if dataset_size is None or isinstance(dataset_size, bool) or not isinstance(
        dataset_size, numbers.Integral
    ) or dataset_size < 1:
        raise InvalidParameterError(
            "a SubsampledEvent without replacement needs dataset_size=n (an integer >= 1): "
            f"dp_accounting describes the batch as sample_size of n, got {dataset_size!r}"
        )
    m = round(ev.q * int(dataset_size))
    if m < 1 or abs(m / int(dataset_size) - ev.q) > 1e-12 * ev.q:
        raise InvalidParameterError(
            f"q={ev.q!r} is not a batch size over dataset_size={dataset_size} "
            f"(q·n = {ev.q * int(dataset_size):.6g} is not an integer)"
        )
    return _ev.SampledWithoutReplacementDpEvent(
        int(dataset_size), m, _to_dp(ev.event, relation, sens2, dataset_size)
    )


