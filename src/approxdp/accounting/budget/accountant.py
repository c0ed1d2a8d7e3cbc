"""PrivacyAccountant: a total (ε, δ) budget that spends can never take past its limit.

The accountant consumes the mechanisms' events (:mod:`approxdp.events`). Gaussian releases
compose exactly through σ* (Zhao et al. Lemma 15); everything else composes by the tightest valid
rule (``composition="auto"``: the better of basic and optimal composition, see
:mod:`approxdp.accounting.budget.rules`). Every spend is checked and recorded atomically
*before* the caller draws noise; a refused spend raises :class:`BudgetExceededError` and
changes nothing.

Example:
    >>> from approxdp.events import GaussianEvent
    >>> acc = PrivacyAccountant(budget=(1.0, 1e-5))
    >>> receipt = acc.spend(GaussianEvent(sigma=10.0))
    >>> receipt.index, acc.remaining().count
    (1, 1)
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from approxdp._validation import check_parameter
from approxdp.accounting.budget.costs import (
    Contribution,
    LedgerState,
    check_cost,
    contribution,
    is_pld_only,
)
from approxdp.accounting.budget.ledger import Ledger, MemoryLedger, SpendRecord
from approxdp.accounting.budget.rules import (
    CLOSED_FORM_RULES,
    COMPOSITION_RULES,
    delta_at,
    epsilon_at,
)
from approxdp.errors import (
    BudgetExceededError,
    InvalidParameterError,
    ParameterTypeError,
    UnknownMethodError,
)
from approxdp.events import PrivacyEvent

__all__ = ["BudgetStatus", "PlanResult", "PrivacyAccountant"]


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """Where a budget stands. The two "remaining" numbers are two views of one frontier.

    Attributes:
        budget_epsilon, budget_delta: the total budget (ε_B, δ_B).
        spent_delta: least δ for which the history is (ε_B, δ)-DP (upper bound).
        spent_epsilon: least ε for which the history is (ε, δ_B)-DP (upper bound; inf if
            no ε suffices).
        remaining_delta: δ_B − spent_delta (δ still available at ε_B).
        remaining_epsilon: ε_B − spent_epsilon (ε still available at δ_B).
        count: number of spends recorded.
        rule: the composition rule used.
    """

    budget_epsilon: float
    budget_delta: float
    spent_epsilon: float
    spent_delta: float
    remaining_epsilon: float
    remaining_delta: float
    count: int
    rule: str


@dataclass(frozen=True, slots=True)
class PlanResult:
    """Answer of :meth:`PrivacyAccountant.plan`: would these events fit?"""

    fits: bool
    status_after: BudgetStatus


def _check_budget(budget: Any) -> tuple[float, float]:
    try:
        eps_raw, delta_raw = budget
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"budget must be an (epsilon, delta) pair, got budget={budget!r}"
        ) from exc
    eps = float(check_parameter("budget epsilon", eps_raw, "epsilon"))
    delta = float(check_parameter("budget delta", delta_raw, "delta_cost"))
    return eps, delta


class PrivacyAccountant:
    """Tracks spends against a total (ε, δ) budget; never lets the total exceed it.

    Args:
        budget: the total (ε, δ): ε ≥ 0 finite, δ ∈ [0, 1). May be left out when ``ledger``
            names an existing ledger file: its stored budget (and, unless ``composition`` is
            given, its rule) is used (:func:`~approxdp.accounting.read_ledger_settings`).
        ledger: None for an in-memory ledger, or a path to a SQLite ledger file (created if
            absent; shared safely by threads and processes; must have been created with the
            same budget and composition).
        composition: "auto" (default), "pld", "basic", "advanced" or "optimal": the rule for
            the non-Gaussian events. Gaussian events always compose exactly (Zhao et al. Lemma
            15). "pld" composes the whole history by its privacy-loss distribution (each
            event's own, certified; the only rule for subsampled Gaussians, as in DP-SGD);
            "auto" is exact for all-Gaussian histories and otherwise the tightest of the PLD
            and the closed-form rules.
        read_only: Open the ``ledger`` file only to read it (a file the user may only read;
            an older schema is read as it is): :meth:`spend` then refuses.

    Raises:
        InvalidParameterError, UnknownMethodError: on a bad budget or composition.
        LedgerError: if the ledger file is corrupt, foreign, or made for another budget.
    """

    def __init__(
        self,
        budget: tuple[float, float] | None = None,
        ledger: str | os.PathLike[str] | None = None,
        composition: str | None = None,
        *,
        read_only: bool = False,
    ) -> None:
        if budget is None:  # reopen an existing ledger with the budget stored in it
            if not isinstance(ledger, str | os.PathLike) or not os.path.isfile(ledger):
                raise ParameterTypeError(
                    "budget=(epsilon, delta) is required unless ledger= names an existing "
                    f"ledger file (got ledger={ledger!r})"
                )
            from approxdp.accounting.budget.sqlite_ledger import read_ledger_settings

            settings = read_ledger_settings(ledger)
            budget = settings.budget
            composition = settings.composition if composition is None else composition
        composition = "auto" if composition is None else composition
        self._epsilon, self._delta = _check_budget(budget)
        if composition not in COMPOSITION_RULES:
            raise UnknownMethodError(
                f"composition must be one of {COMPOSITION_RULES}, got composition={composition!r}"
            )
        self._composition = composition
        self._ledger: Ledger
        if ledger is None:
            self._ledger = MemoryLedger()
        else:
            from approxdp.accounting.budget.sqlite_ledger import SQLiteLedger

            if not isinstance(ledger, str | os.PathLike):
                raise ParameterTypeError(
                    f"ledger must be None or a file path, got {type(ledger).__name__} {ledger!r}"
                )

            self._ledger = SQLiteLedger(
                ledger, budget=(self._epsilon, self._delta), composition=composition,
                read_only=read_only,
            )
        self._persistent = ledger is not None

    @property
    def persistent(self) -> bool:
        """Whether spends are kept in a ledger file (a budget that outlives this process)."""
        return self._persistent

    @property
    def budget(self) -> tuple[float, float]:
        """The total (ε, δ) budget."""
        return (self._epsilon, self._delta)

    @property
    def composition(self) -> str:
        """The composition rule for non-Gaussian events."""
        return self._composition

    def _evaluate(self, state: LedgerState) -> tuple[float, str]:
        return delta_at(state, self._epsilon, self._composition)

    def _status(self, state: LedgerState) -> BudgetStatus:
        spent_delta, rule = self._evaluate(state)
        spent_eps, _ = epsilon_at(state, self._delta, self._composition)
        return BudgetStatus(
            budget_epsilon=self._epsilon,
            budget_delta=self._delta,
            spent_epsilon=spent_eps,
            spent_delta=spent_delta,
            remaining_epsilon=self._epsilon - spent_eps,
            remaining_delta=self._delta - spent_delta,
            count=state.count,
            rule=rule,
        )

    def spend(self, event: PrivacyEvent, *, seeded: bool = False) -> SpendRecord:
        """Debit ``event`` from the budget. Call it BEFORE drawing the noise.

        ``seeded``: the spend pays for a seeded simulation (NOT private), recorded so and shown
        "seeded, not private" wherever the ledger is shown (see
        :class:`~approxdp.releases.PrivateTable`'s ``allow_seeded_ledger``).

        Returns:
            The recorded SpendRecord (with the rule that admitted it).

        Raises:
            BudgetExceededError: the spend would exceed the budget; nothing was recorded.
                ``err.remaining`` is the BudgetStatus before the spend, ``err.requested``
                the event.
            ParameterTypeError, InvalidParameterError: ``event`` is not an accountable event,
                or its cost is not finite (e.g. σ/Δ below about 1e-154); nothing was recorded.
        """
        contrib = self._cost(event)

        def check(old_state: LedgerState, new_state: LedgerState) -> tuple[str, float]:
            needed, rule = self._evaluate(new_state)
            if needed > self._delta:
                before = self._status(old_state)
                raise BudgetExceededError(
                    f"spending {event!r} needs delta={needed:.6g} at epsilon={self._epsilon:g} "
                    f"({rule}) but the budget is ({self._epsilon:g}, {self._delta:g}); "
                    f"remaining before this spend: delta={before.remaining_delta:.6g} at the "
                    f"full epsilon, epsilon={before.remaining_epsilon:.6g} at the full delta",
                    remaining=before,
                    requested=event,
                )
            return rule, needed

        return self._ledger.append(event, contrib, check, seeded=seeded)

    def _cost(self, event: PrivacyEvent) -> Contribution:
        contrib = check_cost(event, contribution(event))
        if self._composition in CLOSED_FORM_RULES and any(map(is_pld_only, contrib.pld)):
            raise InvalidParameterError(
                f"composition={self._composition!r} needs every event's (epsilon, delta), but "
                f"{event!r} (a subsampled Gaussian) has none; account it with "
                "composition='pld' or 'auto'"
            )
        return contrib

    def plan(self, events: Iterable[PrivacyEvent]) -> PlanResult:
        """Would ``events`` (in addition to the history) fit? Spends nothing."""
        state = self._ledger.state()
        for ev in events:
            state = state.add(self._cost(ev))
        status = self._status(state)
        return PlanResult(fits=status.spent_delta <= self._delta, status_after=status)

    def remaining(self) -> BudgetStatus:
        """The budget's current status (no side effects)."""
        return self._status(self._ledger.state())

    def history(self) -> tuple[SpendRecord, ...]:
        """Every accepted spend, oldest first (no side effects)."""
        return self._ledger.records()

    def close(self) -> None:
        """Close the ledger (a no-op for the in-memory ledger)."""
        self._ledger.close()

    def __enter__(self) -> PrivacyAccountant:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

