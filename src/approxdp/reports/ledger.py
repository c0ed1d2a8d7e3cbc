"""A ledger file's budget, rule, every spend and what remains: ``approxdp ledger``'s report,
also shown by the browser's Ledger page. The file is only read — opened read-only, never
created, written or upgraded — so it may be one the user cannot write."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from approxdp.accounting import BudgetStatus, PrivacyAccountant, SpendRecord, read_ledger_settings
from approxdp.accounting.budget.costs import LedgerState, contribution
from approxdp.accounting.budget.rules import epsilon_at
from approxdp.accounting.budget.sqlite_ledger import LedgerSettings
from approxdp.reports.formatting import JSON_SCHEMA_VERSION
from approxdp.reports.releases import budget_dict, spend_dict

__all__ = ["ledger_report", "read_ledger", "running_epsilons"]


def read_ledger(path: Path) -> tuple[LedgerSettings, list[SpendRecord], BudgetStatus]:
    """The settings, every spend (in order) and the status of the ledger at ``path``, read
    without writing anything.

    Raises:
        LedgerError: ``path`` is not an approxdp ledger.
    """
    settings = read_ledger_settings(path)
    accountant = PrivacyAccountant(settings.budget, ledger=path,
                                   composition=settings.composition, read_only=True)
    try:
        return settings, list(accountant.history()), accountant.remaining()
    finally:
        accountant.close()


def running_epsilons(
    records: Sequence[SpendRecord], delta: float, rule: str,
) -> Iterator[tuple[float, float]]:
    """For each spend: (ε of the spend alone, ε of the history up to it), both at ``delta``
    under the ledger's composition ``rule`` — the spent ε in a form a reader can use (the
    δ a spend leaves at the budget's ε is often a number like 1e-131)."""
    state = LedgerState()
    for record in records:
        cost = contribution(record.event)
        alone, _ = epsilon_at(LedgerState().add(cost), delta, rule)
        state = state.add(cost)
        so_far, _ = epsilon_at(state, delta, rule)
        yield alone, so_far


def ledger_report(
    path: Path, read: tuple[LedgerSettings, list[SpendRecord], BudgetStatus] | None = None,
    *, advance: Callable[[float], None] | None = None, epsilons: bool = True,
) -> dict[str, Any]:
    """The ``ledger`` JSON object: ``command, schema_version, file, budget{epsilon, delta},
    composition, spends[...], status{...}`` (:func:`~approxdp.reports.releases.spend_dict`
    with ``epsilon_alone``, ``epsilon_so_far`` and ``at_delta``, see
    :func:`running_epsilons`; :func:`~approxdp.reports.releases.budget_dict`); ``read``: what
    :func:`read_ledger` returned for ``path``, when the caller has it already; ``advance``
    is called once per spend accounted (a progress bar). ``epsilons=False`` leaves the
    per-spend ε out (a caller that replays the history itself, as the browser's Ledger page
    does for its burn-down, fills them from that).

    Raises:
        LedgerError: ``path`` is not an approxdp ledger.
    """
    settings, records, status = read if read is not None else read_ledger(path)
    delta = settings.budget[1]
    spends = [] if epsilons else [spend_dict(r) for r in records]
    if epsilons:
        for record, (alone, so_far) in zip(
            records, running_epsilons(records, delta, settings.composition), strict=True
        ):
            spends.append({**spend_dict(record), "epsilon_alone": alone,
                           "epsilon_so_far": so_far, "at_delta": delta})
            if advance is not None:
                advance(1)
    return {
        "command": "ledger",
        "schema_version": JSON_SCHEMA_VERSION,
        "file": str(path),
        "budget": {"epsilon": settings.budget[0], "delta": settings.budget[1]},
        "composition": settings.composition,
        "spends": spends,
        "status": budget_dict(status),
    }
