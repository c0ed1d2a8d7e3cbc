"""Google dp_accounting's accountant interface, backed by approxdp's certified PLD accountant.

:class:`PLDAccountant` is a ``dp_accounting.PrivacyAccountant``: it takes the same ``DpEvent``
trees (``compose(event, count=1)``, ``supports(event)``), the same ``NeighboringRelation`` and
answers ``get_epsilon(target_delta)`` / ``get_delta(target_epsilon)``, so code written for
``dp_accounting.pld.PLDAccountant`` (TF Privacy's and JAX Privacy's training loops among it)
runs unchanged. The numbers are approxdp's: the ε it reports is never below the true ε, within
about ``precision`` of it (Doroshenko et al. 2022, https://arxiv.org/abs/2207.04380; Koskela et
al. 2021, https://arxiv.org/abs/2006.07134), and :meth:`PLDAccountant.epsilon` gives the
certified bracket too.

Conversion both ways: :func:`from_dp_event` turns a ``DpEvent`` into approxdp (event, count)
pairs (the input of :func:`~approxdp.accounting.pld_epsilon`, or of a ledger), and
:func:`to_dp_event` turns approxdp events back into a ``DpEvent``.

**Sensitivity conventions.** A ``GaussianDpEvent``'s noise multiplier is the noise std over C,
where every record's contribution has norm ≤ C. Adding or removing a record moves the sum by C;
*replacing* one moves it by up to 2C. Under ``REPLACE_ONE`` this module therefore accounts a
Gaussian (plain, or in a ``SampledWithoutReplacementDpEvent``) with sensitivity Δ = 2C, as
dp_accounting's own PLD accountant does for the plain Gaussian and as
:func:`~approxdp.accounting.dpsgd_epsilon` does for ``sampling="without-replacement"`` (Zhu,
Dong, Wang 2022, https://arxiv.org/abs/2106.08567, Thm 10). dp_accounting's *RDP* accountant
evaluates both with Δ = C (Wang, Balle, Kasiviswanathan 2019,
https://arxiv.org/abs/1808.00087, with σ relative to the substitution sensitivity), i.e. for a
mechanism whose replacement moves the sum by C only. ``replace_one_sensitivity=1.0``
reproduces that convention, for comparisons; it is not private for a sum of clipped vectors.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.pld.accounting import DEFAULT_PRECISION, pld_delta, pld_epsilon
from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.events import PrivacyEvent

# _dp_events imports dp_accounting behind the one MissingDependencyError guard
from approxdp.integrations._dp_events import (
    _ADD_REMOVE,
    Items,
    NeighboringRelation,
    UnsupportedDpEventError,
    _check_count,
    _check_relation,
    _check_replace_sensitivity,
    _convert,
    _scalar,
    _unsupported_message,
    _UnsupportedError,
    dp_accounting,
    from_dp_event,
    to_dp_event,
)

__all__ = [
    "NeighboringRelation",
    "PLDAccountant",
    "UnsupportedDpEventError",
    "from_dp_event",
    "to_dp_event",
]

_NON_PRIVATE = "a non-private event (NonPrivateDpEvent or zero noise) was composed"


class PLDAccountant(dp_accounting.PrivacyAccountant):  # type: ignore[misc]
    """dp_accounting's ``PrivacyAccountant`` interface on approxdp's certified PLD accountant.

    A drop-in for ``dp_accounting.pld.PLDAccountant``: ``compose(event, count=1)`` (chainable),
    ``get_epsilon(target_delta)``, ``get_delta(target_epsilon)``, ``supports(event)``,
    ``ledger`` and ``neighboring_relation``. Identical sub-events are merged and composed by
    one FFT each, however often they were composed, and answers are cached until the next
    ``compose``.

    Args:
        neighboring_relation: ``ADD_OR_REMOVE_ONE`` (default), ``REPLACE_ONE`` (for sampling
            without replacement) or ``REPLACE_SPECIAL``.
        value_discretization_interval: dp_accounting's grid step; None (default) lets approxdp
            choose it from ``precision`` (a given step is used as is).
        precision: target relative excess of ε over the true value (default 1e-3).
        replace_one_sensitivity: Gaussian sensitivity under ``REPLACE_ONE``, in units of C:
            2.0 (default; see the module's note) or 1.0 (dp_accounting's RDP convention).

    Example:
        >>> import dp_accounting
        >>> acct = PLDAccountant()
        >>> event = dp_accounting.PoissonSampledDpEvent(
        ...     256 / 60000, dp_accounting.GaussianDpEvent(1.1))
        >>> round(acct.compose(event, 14063).get_epsilon(1e-5), 3)
        2.382
    """

    def __init__(
        self,
        neighboring_relation: NeighboringRelation = _ADD_REMOVE,
        value_discretization_interval: float | None = None,
        *,
        precision: float = DEFAULT_PRECISION,
        replace_one_sensitivity: float = 2.0,
    ) -> None:
        super().__init__(_check_relation(neighboring_relation))
        self._sens2 = _check_replace_sensitivity(replace_one_sensitivity)
        if value_discretization_interval is not None:
            step = value_discretization_interval
            if isinstance(step, bool) or not isinstance(step, numbers.Real) or not (
                math.isfinite(step) and step > 0
            ):
                raise InvalidParameterError(
                    "value_discretization_interval must be a finite number > 0 or None, got "
                    f"value_discretization_interval={step!r}"
                )
        self._h = None if value_discretization_interval is None else float(
            value_discretization_interval)
        self._precision = precision
        self._items: dict[PrivacyEvent, int] = {}
        self._non_private = False
        self._answers: dict[tuple[str, Any], Guarantee] = {}
        pld_epsilon([], 0.5, precision=precision)  # checks precision now, not at the first ask

    def _maybe_compose(self, event: Any, count: int, do_compose: bool) -> Any:
        try:
            out = _convert(event, count, self.neighboring_relation, self._sens2)
        except _UnsupportedError as exc:
            return self.CompositionErrorDetails(
                invalid_event=exc.event,
                error_message=_unsupported_message(exc, event, self.neighboring_relation),
            )
        if do_compose:
            for ev, c in out.items:
                self._items[ev] = self._items.get(ev, 0) + c
            self._non_private |= out.non_private
            self._answers.clear()
        return None

    def compose(self, event: Any, count: int = 1) -> PLDAccountant:
        """Account ``event`` ``count`` times (adaptively composed); returns ``self``.

        Raises:
            UnsupportedDpEventError: ``event`` (or a sub-event, named in the message) cannot
                be accounted here; nothing was composed.
            ParameterTypeError: ``event`` is not a ``DpEvent``, or a bad ``count``.
        """
        if not isinstance(event, dp_accounting.DpEvent):
            raise ParameterTypeError(f"event must be a dp_accounting DpEvent, got "
                                     f"{type(event).__name__}")
        count = _check_count(count)
        error = self._maybe_compose(event, count, False)
        if error is not None:
            raise UnsupportedDpEventError(error.error_message, error.invalid_event)
        super().compose(event, count)
        return self

    @property
    def items(self) -> Items:
        """What was composed, as approxdp (event, count) pairs (non-private parts aside)."""
        return list(self._items.items())

    def epsilon(self, target_delta: float) -> Guarantee:
        """ε at δ as a labelled :class:`~approxdp.accounting.Guarantee` with its certified
        bracket (ε = ∞ once a non-private event was composed)."""
        key = ("epsilon", _scalar("target_delta", target_delta))
        if key not in self._answers:
            g = pld_epsilon(self.items, target_delta, precision=self._precision, h=self._h)
            if self._non_private:
                g = Guarantee(math.inf, g.delta, "exact", _NON_PRIVATE)
            self._answers[key] = g
        return self._answers[key]

    def delta(self, target_epsilon: float) -> Guarantee:
        """δ at ε as a labelled :class:`~approxdp.accounting.Guarantee` (δ = 1 once a
        non-private event was composed)."""
        key = ("delta", _scalar("target_epsilon", target_epsilon))
        if key not in self._answers:
            g = pld_delta(self.items, target_epsilon, precision=self._precision, h=self._h)
            if self._non_private:
                g = Guarantee(g.epsilon, 1.0, "exact", _NON_PRIVATE)
            self._answers[key] = g
        return self._answers[key]

    def get_epsilon(self, target_delta: float) -> float:
        """The least ε (a certified upper bound) such that what was composed is
        (ε, target_delta)-DP; ``inf`` after a ``NonPrivateDpEvent``."""
        return float(self.epsilon(target_delta).epsilon)

    def get_delta(self, target_epsilon: float) -> float:
        """The least δ (a certified upper bound) such that what was composed is
        (target_epsilon, δ)-DP; 1 after a ``NonPrivateDpEvent``."""
        return float(self.delta(target_epsilon).delta)
