"""A ledger file's budget, which filter and mode certify it, every spend and committed plan,
and what remains: ``approxdp ledger``'s report, also shown by the browser's Ledger page.

Opening a ledger written before privacy filters upgrades it and re-certifies its history under
the ``"gdp"`` filter (:mod:`approxdp.accounting.budget.sqlite_ledger`); the report then carries
the :class:`~approxdp.errors.LedgerRecertificationWarning` text, and the status says whether the
ledger refuses spends."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from approxdp.accounting import BudgetStatus, PrivacyAccountant, SpendRecord, read_ledger_settings
from approxdp.accounting.budget.filter import Commitment
from approxdp.accounting.budget.ledger import FilterLogEntry
from approxdp.accounting.budget.sqlite_ledger import LedgerSettings
from approxdp.accounting.serialization import event_from_json, event_to_obj
from approxdp.errors import ApproxDPError, LedgerRecertificationWarning
from approxdp.reports.formatting import JSON_SCHEMA_VERSION
from approxdp.reports.releases import budget_dict, spend_dict

__all__ = ["LedgerReading", "burn_down", "commitment_dict", "ledger_report", "read_ledger"]


@dataclass(frozen=True, slots=True)
class LedgerReading:
    """Everything a report shows of one ledger file (read once).

    Attributes:
        settings: its stored budget, mode and rule (after any upgrade on opening).
        records: every spend, oldest first.
        status: where the budget stands.
        commitments: every committed plan.
        log: every commit and close, with its time.
        explanation: :meth:`~approxdp.accounting.PrivacyAccountant.explain`'s text.
        warnings: the re-certification warnings opening it raised.
    """

    settings: LedgerSettings
    records: list[SpendRecord]
    status: BudgetStatus
    commitments: tuple[Commitment, ...]
    log: tuple[FilterLogEntry, ...]
    explanation: str
    warnings: tuple[str, ...]


def read_ledger(path: Path) -> LedgerReading:
    """Read the ledger at ``path`` (with its stored budget, mode and rule).

    Raises:
        LedgerError: ``path`` is not an approxdp ledger.
    """
    read_ledger_settings(path)  # LedgerError for a missing, foreign or corrupt file
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LedgerRecertificationWarning)
        accountant = PrivacyAccountant(ledger=path)
    try:
        reading = LedgerReading(
            read_ledger_settings(path), list(accountant.history()), accountant.remaining(),
            accountant.commitments(), accountant.commitment_log(), accountant.explain(),
            tuple(str(w.message) for w in caught
                  if issubclass(w.category, LedgerRecertificationWarning)),
        )
    finally:
        accountant.close()
    return reading


def commitment_dict(commitment: Commitment) -> dict[str, Any]:
    """A committed plan as a JSON object: ``id, label, pricing, planned[{event, count}],
    planned_count, spent, state`` (open, spent or closed)."""
    planned = [{"event": event_to_obj(event_from_json(k), labels=False), "count": c}
               for k, c in commitment.planned]
    state = "closed" if commitment.closed else "open" if commitment.open else "spent"
    return {"id": commitment.id, "label": commitment.label, "pricing": commitment.pricing,
            "planned": planned, "planned_count": sum(c for _, c in commitment.planned),
            "spent": commitment.spent, "state": state}


def ledger_report(path: Path, read: LedgerReading | None = None) -> dict[str, Any]:
    """The ``ledger`` JSON object: ``command, schema_version, file, budget{epsilon, delta},
    adaptivity, composition, basic_share, spends[...], commitments[...], status{...}, explain,
    warnings[...]`` (:func:`~approxdp.reports.releases.spend_dict`,
    :func:`commitment_dict`, :func:`~approxdp.reports.releases.budget_dict`); ``read``: what
    :func:`read_ledger` returned for ``path``, when the caller has it already.

    Raises:
        LedgerError: ``path`` is not an approxdp ledger.
    """
    r = read if read is not None else read_ledger(path)
    settings = r.settings
    return {
        "command": "ledger",
        "schema_version": JSON_SCHEMA_VERSION,
        "file": str(path),
        "budget": {"epsilon": settings.budget[0], "delta": settings.budget[1]},
        "adaptivity": settings.adaptivity,
        "composition": settings.composition,
        "basic_share": settings.basic_share,
        "spends": [spend_dict(x) for x in r.records],
        "commitments": [commitment_dict(c) for c in r.commitments],
        "status": budget_dict(r.status),
        "explain": r.explanation,
        "warnings": list(r.warnings),
    }


def burn_down(read: LedgerReading, limit: int) -> list[dict[str, Any]]:
    """The ε and δ spent after each of the first ``limit`` spends, from the ledger's own
    decisions replayed in order on an in-memory accountant of the same budget, mode and rule
    (commits and closes at their times); a replay refused ends the list."""
    s = read.settings
    replay = PrivacyAccountant(s.budget, composition=s.composition,
                               adaptivity=s.adaptivity or "full", basic_share=s.basic_share)
    steps: list[tuple[float, int, Any]] = [(e.timestamp, 0, e) for e in read.log]
    steps += [(x.timestamp, 1, x) for x in read.records[:limit]]
    out: list[dict[str, Any]] = []
    try:
        for _, _, item in sorted(steps, key=lambda t: (t[0], t[1])):
            if isinstance(item, FilterLogEntry):
                if item.kind == "commit":
                    pairs = [(event_from_json(k), int(c)) for k, c in json.loads(item.events)]
                    replay.commit(pairs, label=item.label)
                else:
                    replay.close_commitment(item.commitment)
                continue
            replay.spend(item.event)
            now = replay.remaining()
            out.append({"index": item.index, "timestamp": item.timestamp,
                        "spent_epsilon": now.spent_epsilon, "spent_delta": now.spent_delta,
                        "remaining_epsilon": now.remaining_epsilon})
    except ApproxDPError:  # the ledger admitted it; a replay refusing it ends the chart
        pass
    return out
