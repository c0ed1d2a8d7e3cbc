"""A ledger file's budget, which filter and mode certify it, every spend and committed plan,
and what remains: ``approxdp ledger``'s report, also shown by the browser's Ledger page.

The file is only read — opened read-only, never created, written or upgraded — so it may be one
the user cannot write. A ledger written before privacy filters is re-certified in memory under
the ``"gdp"`` filter (as opening it for writing would do, see
:mod:`approxdp.accounting.budget.sqlite_ledger`); the report then carries the
:class:`~approxdp.errors.LedgerRecertificationWarning` text, and the status says whether the
ledger refuses spends."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from approxdp.accounting import BudgetStatus, PrivacyAccountant, SpendRecord, read_ledger_settings
from approxdp.accounting.budget.costs import LedgerState, contribution
from approxdp.accounting.budget.filter_rdp import rdp_left
from approxdp.accounting.budget.filter_state import Commitment, RdpShare
from approxdp.accounting.budget.ledger import FilterLogEntry
from approxdp.accounting.budget.rules import epsilon_at
from approxdp.accounting.budget.sqlite_ledger import LedgerSettings
from approxdp.accounting.serialization import event_from_json, event_to_obj
from approxdp.errors import ApproxDPError, LedgerRecertificationWarning
from approxdp.reports.formatting import JSON_SCHEMA_VERSION
from approxdp.reports.releases import budget_dict, spend_dict

__all__ = [
    "LedgerReading",
    "accountant_budget",
    "burn_down",
    "commitment_dict",
    "ledger_report",
    "rdp_share_dict",
    "read_ledger",
    "running_epsilons",
    "sub_budget_dicts",
]


@dataclass(frozen=True, slots=True)
class LedgerReading:
    """Everything a report shows of one ledger file (read once, read-only).

    Attributes:
        settings: its stored budget, mode and rule.
        records: every spend, oldest first.
        status: where the budget stands.
        commitments: every committed plan.
        log: every commit and close, with its time.
        explanation: :meth:`~approxdp.accounting.PrivacyAccountant.explain`'s text.
        warnings: the re-certification warnings reading it raised.
        adaptivity: the mode that certifies it (an old file's: the filter it is re-certified
            under, in memory).
        composition: the filter or rule that certifies it.
        rdp_share: its Rényi share (orders, budgets, what is used), or None.
        sub_budgets: each sub-budget's name, (ε_i, δ_i) and status (empty: none).
    """

    settings: LedgerSettings
    records: list[SpendRecord]
    status: BudgetStatus
    commitments: tuple[Commitment, ...]
    log: tuple[FilterLogEntry, ...]
    explanation: str
    warnings: tuple[str, ...]
    adaptivity: str = "full"
    composition: str = "gdp"
    rdp_share: RdpShare | None = None
    sub_budgets: dict[str, dict[str, Any]] = field(default_factory=dict)


def read_ledger(path: Path) -> LedgerReading:
    """Read the ledger at ``path`` (with its stored budget, mode and rule) without writing
    anything.

    Raises:
        LedgerError: ``path`` is not an approxdp ledger.
    """
    settings = read_ledger_settings(path)  # LedgerError for a missing, foreign or corrupt file
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LedgerRecertificationWarning)
        accountant = PrivacyAccountant(ledger=path, read_only=True)
    try:
        reading = LedgerReading(
            settings, list(accountant.history()), accountant.remaining(),
            accountant.commitments(), accountant.commitment_log(), accountant.explain(),
            tuple(str(w.message) for w in caught
                  if issubclass(w.category, LedgerRecertificationWarning)),
            accountant.adaptivity, accountant.composition, accountant.rdp_share,
            sub_budget_dicts(accountant),
        )
    finally:
        accountant.close()
    return reading


def rdp_share_dict(share: RdpShare | None) -> dict[str, Any] | None:
    """A Rényi share as a JSON object (None for none): ``epsilon, delta`` (the (ε_R, δ_R) it
    is certified for), ``orders`` α_j, ``budgets`` B_j ((α_j, B_j)-RDP converts to
    (ε_R, δ_R/k)-DP), ``used`` Σρ(α_j) charged so far, ``delta_per_order`` δ_R/k,
    ``best_order`` (the order with the most of its budget left, as a fraction: where the
    next subsampled Gaussian is most likely to fit), ``best_used``, ``best_budget``, and
    ``alive`` (some order is still within its budget: the share admits more)."""
    if share is None:
        return None
    order, used, total = rdp_left(share)
    return {"epsilon": float(share.epsilon), "delta": float(share.delta),
            "orders": list(share.orders), "budgets": list(share.budgets),
            "used": list(share.used), "delta_per_order": float(share.delta) / len(share.orders),
            "best_order": order, "best_used": used, "best_budget": total,
            "alive": share.alive()}


def sub_budget_dicts(accountant: Any) -> dict[str, dict[str, Any]]:
    """Each sub-budget of ``accountant`` (``sub_budgets=``) as ``{name: {budget{epsilon,
    delta}, file, status{...}, rdp_share}}`` (``file``: its ledger file, or None in memory;
    :func:`~approxdp.reports.releases.budget_dict`, :func:`rdp_share_dict`); empty for
    none."""
    out: dict[str, dict[str, Any]] = {}
    for name, (eps, dlt) in getattr(accountant, "sub_budgets", {}).items():
        sub = accountant.sub(name)
        path = getattr(sub, "ledger_path", None)
        out[name] = {"budget": {"epsilon": eps, "delta": dlt},
                     "file": None if path is None else str(path),
                     "status": budget_dict(sub.remaining()),
                     "rdp_share": rdp_share_dict(sub.rdp_share)}
    return out


def accountant_budget(accountant: Any) -> dict[str, Any]:
    """What a release reports of the accountant that paid for it:
    :func:`~approxdp.reports.releases.budget_dict` of its status, with ``rdp_share``
    (:func:`rdp_share_dict`) and ``sub_budgets`` (:func:`sub_budget_dicts`)."""
    return {**budget_dict(accountant.remaining()),
            "rdp_share": rdp_share_dict(getattr(accountant, "rdp_share", None)),
            "sub_budgets": sub_budget_dicts(accountant)}


def commitment_dict(commitment: Commitment) -> dict[str, Any]:
    """A committed plan as a JSON object: ``id, label, pricing, planned[{event, count}],
    planned_count, spent, state`` (open, spent or closed)."""
    planned = [{"event": event_to_obj(event_from_json(k), labels=False), "count": c}
               for k, c in commitment.planned]
    state = "closed" if commitment.closed else "open" if commitment.open else "spent"
    return {"id": commitment.id, "label": commitment.label, "pricing": commitment.pricing,
            "planned": planned, "planned_count": sum(c for _, c in commitment.planned),
            "spent": commitment.spent, "state": state}


def running_epsilons(
    records: Sequence[SpendRecord], delta: float, rule: str,
) -> Iterator[tuple[float, float]]:
    """For each spend: (ε of the spend alone, ε of the history up to it as a declared
    sequence), both at ``delta`` under the declared-sequence ``rule`` — the spent ε in a form a
    reader can use (the δ a spend leaves at the budget's ε is often a number like 1e-131)."""
    state = LedgerState()
    for record in records:
        cost = contribution(record.event)
        alone, _ = epsilon_at(LedgerState().add(cost), delta, rule)
        state = state.add(cost)
        so_far, _ = epsilon_at(state, delta, rule)
        yield alone, so_far


def _filter_epsilons(read: LedgerReading) -> Iterator[tuple[float, float]]:
    """For a privacy filter: (ε of the spend alone as a declared event, the filter's spent ε
    after it — its odometer reading), from :func:`burn_down` (NaN past a refused replay)."""
    delta = read.settings.budget[1]
    burn = {b["index"]: b["spent_epsilon"] for b in burn_down(read, len(read.records))}
    for record in read.records:
        alone, _ = epsilon_at(LedgerState().add(contribution(record.event)), delta, "auto")
        yield alone, burn.get(record.index, float("nan"))


def ledger_report(
    path: Path, read: LedgerReading | None = None,
    *, advance: Callable[[float], None] | None = None, epsilons: bool = True,
) -> dict[str, Any]:
    """The ``ledger`` JSON object: ``command, schema_version, file, budget{epsilon, delta},
    adaptivity, composition, legacy_composition, basic_share, sub_budget_of, spends[...],
    commitments[...], status{...}, explain, warnings[...]`` (``sub_budget_of``: for a
    sub-budget's own file, ``{ledger_id, name}`` of the ledger it belongs to, else None;
    status: as :func:`accountant_budget`, with the
    Rényi share's used sums as stored; :func:`~approxdp.reports.releases.spend_dict` with
    ``epsilon_alone``, ``epsilon_so_far``, ``at_delta`` and ``so_far_is`` — under a privacy
    filter the filter's odometer reading, else the declared sequence's ε under the ledger's
    rule, see :func:`running_epsilons`; :func:`commitment_dict`;
    :func:`~approxdp.reports.releases.budget_dict`); ``read``: what :func:`read_ledger`
    returned for ``path``, when the caller has it already; ``advance`` is called once per spend
    accounted (a progress bar). ``epsilons=False`` leaves the per-spend ε out (a caller that
    replays the history itself, as the browser's Ledger page does for its burn-down).

    Raises:
        LedgerError: ``path`` is not an approxdp ledger.
    """
    r = read if read is not None else read_ledger(path)
    settings = r.settings
    delta = settings.budget[1]
    spends = [] if epsilons else [spend_dict(x) for x in r.records]
    if epsilons:
        fixed = r.adaptivity == "fixed"
        so_far_is = ("the declared sequence's ε under the ledger's rule" if fixed else
                     "the privacy filter's spent ε (its odometer)")
        values = (running_epsilons(r.records, delta, r.composition) if fixed
                  else _filter_epsilons(r))
        for record, (alone, so_far) in zip(r.records, values, strict=True):
            spends.append({**spend_dict(record), "epsilon_alone": alone,
                           "epsilon_so_far": so_far, "at_delta": delta,
                           "so_far_is": so_far_is})
            if advance is not None:
                advance(1)
    return {
        "command": "ledger",
        "schema_version": JSON_SCHEMA_VERSION,
        "file": str(path),
        "budget": {"epsilon": settings.budget[0], "delta": settings.budget[1]},
        "adaptivity": r.adaptivity,
        "composition": r.composition,
        "legacy_composition": settings.legacy_composition,
        "basic_share": settings.basic_share,
        "sub_budget_of": _sub_budget_of(settings),
        "spends": spends,
        "commitments": [commitment_dict(c) for c in r.commitments],
        "status": {**budget_dict(r.status), "rdp_share": rdp_share_dict(r.rdp_share),
                   "sub_budgets": r.sub_budgets},
        "explain": r.explanation,
        "warnings": list(r.warnings),
    }


def _sub_budget_of(settings: LedgerSettings) -> dict[str, str] | None:
    """``{"ledger_id", "name"}`` of the ledger a sub-budget file belongs to, or None."""
    of = getattr(settings, "sub_budget_of", None)
    return None if of is None else {"ledger_id": of[0], "name": of[1]}


def burn_down(read: LedgerReading, limit: int) -> list[dict[str, Any]]:
    """The ε and δ spent after each of the first ``limit`` spends, from the ledger's own
    decisions replayed in order on an in-memory accountant of the same budget, mode and rule
    (commits and closes at their times); a replay refused ends the list."""
    s = read.settings
    mode = s.adaptivity or "full"
    rule = s.composition if s.adaptivity is not None else None
    replay = PrivacyAccountant(s.budget, composition=rule, adaptivity=mode,
                               basic_share=s.basic_share, rdp_share=s.rdp_share,
                               rdp_orders=s.rdp_orders)
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
