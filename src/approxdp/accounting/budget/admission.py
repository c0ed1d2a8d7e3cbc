"""How a :class:`~approxdp.accounting.PrivacyAccountant` asks its filter (or its rule) inside a
ledger transaction: the check of a spend, the updates that commit and close a plan, and the
dry run of :meth:`~approxdp.accounting.PrivacyAccountant.plan`.

The decisions themselves are the filter's (:mod:`approxdp.accounting.budget.filter`: the
residue argument, Regehr et al. 2026, arXiv:2602.15815) or, with ``adaptivity="fixed"``, the
rule's (:mod:`approxdp.accounting.composition.rules`); this module turns their refusals into
:class:`~approxdp.errors.BudgetExceededError` with the status before the request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence

from approxdp.accounting.budget.filter import (
    Commitment,
    FilterKind,
    FilterRefusedError,
    FilterState,
    admit_commit,
    admit_spend,
    close_commitment,
)
from approxdp.accounting.budget.ledger import Decision
from approxdp.accounting.budget.status import BudgetStatus, PlanResult, filter_reading
from approxdp.accounting.composition.costs import (
    Contribution,
    LedgerState,
    check_cost,
    contribution,
    is_pld_only,
)
from approxdp.accounting.composition.rules import CLOSED_FORM_RULES, delta_at
from approxdp.errors import BudgetExceededError, InvalidParameterError
from approxdp.events import PrivacyEvent

__all__ = ["accountable_cost", "close_update", "commit_update", "plan_result", "spend_check"]

#: A ledger's status in a state (the accountant's ``_status``).
StatusOf = Callable[[LedgerState], BudgetStatus]
#: What a filter update returns to the ledger: the new state and its audit row.
FilterUpdate = tuple[FilterState, dict[str, str] | None]


def accountable_cost(event: PrivacyEvent, filter_kind: FilterKind | None,
                     composition: str) -> Contribution:
    """``event``'s cost, checked: finite, and with an (ε, δ) where the rule needs one."""
    contrib = check_cost(event, contribution(event))
    if (filter_kind is None and composition in CLOSED_FORM_RULES
            and any(map(is_pld_only, contrib.pld))):
        raise InvalidParameterError(
            f"composition={composition!r} needs every event's (epsilon, delta), but "
            f"{event!r} (a subsampled Gaussian) has none; account it with "
            "composition='pld' or 'auto' (adaptivity='fixed'), or under the 'gdp' filter"
        )
    return contrib


def spend_check(event: PrivacyEvent, budget: tuple[float, float], composition: str,
                status: StatusOf) -> Callable[[LedgerState, LedgerState], Decision]:
    """The check a ledger runs, in its transaction, before it records ``event``: the filter's
    admission (or, without a filter, the rule's δ at the budget's ε); raises
    :class:`~approxdp.errors.BudgetExceededError` (nothing is recorded) if it does not fit."""
    epsilon, delta = budget

    def check(old_state: LedgerState, new_state: LedgerState) -> Decision:
        if old_state.filter is not None:
            try:
                f, charge = admit_spend(old_state.filter, event, budget)
            except FilterRefusedError as exc:
                before = status(old_state)
                raise BudgetExceededError(
                    f"{exc}; remaining before this spend: delta="
                    f"{before.remaining_delta:.6g} at the full epsilon, epsilon="
                    f"{before.remaining_epsilon:.6g} at the full delta",
                    remaining=before, requested=event,
                ) from None
            _, delta_after = filter_reading(f, budget)
            return Decision(charge.describe(f.kind), delta_after, f, charge.to_json())
        needed, rule = delta_at(new_state, epsilon, composition)
        if needed > delta:
            before = status(old_state)
            raise BudgetExceededError(
                f"spending {event!r} needs delta={needed:.6g} at epsilon={epsilon:g} "
                f"({rule}) but the budget is ({epsilon:g}, {delta:g}); "
                f"remaining before this spend: delta={before.remaining_delta:.6g} at the "
                f"full epsilon, epsilon={before.remaining_epsilon:.6g} at the full delta",
                remaining=before,
                requested=event,
            )
        return Decision(rule, needed)

    return check


def commit_update(items: Sequence[tuple[PrivacyEvent, int]], label: str,
                  budget: tuple[float, float], status: StatusOf,
                  box: list[Commitment]) -> Callable[[LedgerState], FilterUpdate]:
    """The filter update that commits a plan (``box`` receives the commitment)."""

    def update(state: LedgerState) -> FilterUpdate:
        assert state.filter is not None
        try:
            f, commitment, charge = admit_commit(state.filter, items, label, budget)
        except FilterRefusedError as exc:
            raise BudgetExceededError(
                str(exc), remaining=status(state), requested=[e for e, _ in items]
            ) from None
        box.append(commitment)
        return f, {"kind": "commit", "commitment": str(commitment.id), "label": label,
                   "pricing": commitment.pricing, "events": _planned_json(commitment),
                   "charge": charge.to_json()}

    return update


def close_update(cid: int, budget: tuple[float, float],
                 box: list[Commitment]) -> Callable[[LedgerState], FilterUpdate]:
    """The filter update that closes plan ``cid`` (``box`` receives the closed plan)."""

    def update(state: LedgerState) -> FilterUpdate:
        assert state.filter is not None
        f, charge = close_commitment(state.filter, cid, budget)
        closed = next(c for c in f.commitments if c.id == cid)
        box.append(closed)
        return f, {"kind": "close", "commitment": str(cid), "label": closed.label,
                   "pricing": closed.pricing, "events": _planned_json(closed),
                   "charge": charge.to_json()}

    return update


def plan_result(state: LedgerState, events: Iterable[PrivacyEvent],
                budget: tuple[float, float], cost: Callable[[PrivacyEvent], Contribution],
                status: StatusOf) -> PlanResult:
    """Would ``events``, spent in this order after ``state``, fit? Spends nothing."""
    for ev in events:
        contrib = cost(ev)
        new_state = state.add(contrib)
        if state.filter is not None:
            try:
                f, _ = admit_spend(state.filter, ev, budget)
            except FilterRefusedError as exc:
                return PlanResult(False, status(state), str(exc))
            new_state = new_state.with_filter(f)
        state = new_state
    result = status(state)
    if state.filter is None and result.spent_delta > budget[1]:
        return PlanResult(False, result, "the history with these events needs delta="
                          f"{result.spent_delta:.6g} at epsilon={budget[0]:g}")
    return PlanResult(True, result)


def _planned_json(c: Commitment) -> str:
    return json.dumps([list(p) for p in c.planned])
