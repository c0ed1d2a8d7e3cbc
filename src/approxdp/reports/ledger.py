"""A ledger file's budget, rule, every spend and what remains: ``approxdp ledger``'s report,
also shown by the browser's Ledger page (the file is only read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from approxdp.accounting import BudgetStatus, PrivacyAccountant, SpendRecord, read_ledger_settings
from approxdp.accounting.budget.sqlite_ledger import LedgerSettings
from approxdp.reports.formatting import JSON_SCHEMA_VERSION
from approxdp.reports.releases import budget_dict, spend_dict

__all__ = ["ledger_report", "read_ledger"]


def read_ledger(path: Path) -> tuple[LedgerSettings, list[SpendRecord], BudgetStatus]:
    """The settings, every spend (in order) and the status of the ledger at ``path``.

    Raises:
        LedgerError: ``path`` is not an approxdp ledger.
    """
    settings = read_ledger_settings(path)
    accountant = PrivacyAccountant(settings.budget, ledger=path,
                                   composition=settings.composition)
    try:
        return settings, list(accountant.history()), accountant.remaining()
    finally:
        accountant.close()


def ledger_report(
    path: Path, read: tuple[LedgerSettings, list[SpendRecord], BudgetStatus] | None = None,
) -> dict[str, Any]:
    """The ``ledger`` JSON object: ``command, schema_version, file, budget{epsilon, delta},
    composition, spends[...], status{...}`` (:func:`~approxdp.reports.releases.spend_dict`,
    :func:`~approxdp.reports.releases.budget_dict`); ``read``: what :func:`read_ledger`
    returned for ``path``, when the caller has it already.

    Raises:
        LedgerError: ``path`` is not an approxdp ledger.
    """
    settings, records, status = read if read is not None else read_ledger(path)
    return {
        "command": "ledger",
        "schema_version": JSON_SCHEMA_VERSION,
        "file": str(path),
        "budget": {"epsilon": settings.budget[0], "delta": settings.budget[1]},
        "composition": settings.composition,
        "spends": [spend_dict(r) for r in records],
        "status": budget_dict(status),
    }
