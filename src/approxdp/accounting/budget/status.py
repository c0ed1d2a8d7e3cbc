"""What a budget's status says, and how it is read from a ledger's state.

:class:`BudgetStatus` is what :meth:`PrivacyAccountant.remaining
<approxdp.accounting.PrivacyAccountant.remaining>` returns. Under a privacy filter (Rogers et al.
2016, arXiv:1605.08294) its "spent" figures measure the room used (the (ε, δ) of the
all-Gaussian history using the same room: the Gaussian's exact profile, Balle & Wang 2018,
arXiv:1805.06530, Theorem 8) and the guarantee for what was released is the budget itself, at
any time; under ``adaptivity="fixed"`` they are the declared sequence's (ε, δ) under the rule
(:mod:`approxdp.accounting.composition.rules`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from approxdp.accounting.budget.filter import (
    FilterKind,
    FilterState,
    budget_rho,
    gdp_equivalent,
)
from approxdp.accounting.budget.filter_rdp import rdp_left
from approxdp.accounting.composition.costs import LedgerState
from approxdp.accounting.composition.filter_state import ZERO
from approxdp.accounting.composition.gaussian import sigma_from_rho
from approxdp.accounting.composition.rules import delta_at, epsilon_at
from approxdp.accounting.registry import accounting_rule

__all__ = ["BudgetStatus", "PlanResult", "explain_text", "filter_reading", "fixed_reading",
           "status_of"]

_FIXED_PROMISE = (
    "valid only as the caller promised: every spend's parameters were fixed before any noise "
    "was drawn (adaptivity='fixed'); an analyst who adapts can exceed it"
)


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """Where a budget stands, and what certifies it.

    Attributes:
        budget_epsilon, budget_delta: the total budget (ε_B, δ_B).
        spent_delta: δ at ε_B of what has been spent (see ``spent_meaning``).
        spent_epsilon: ε at δ_B of what has been spent (inf if no ε suffices).
        remaining_delta: δ_B − spent_delta.
        remaining_epsilon: ε_B − spent_epsilon.
        count: number of spends recorded.
        rule: the rule that certifies the total (with its source).
        adaptivity: ``"full"`` (a privacy filter: valid however the spends adapted) or
            ``"fixed"`` (valid for a sequence declared in advance, as the caller promised).
        certified_by: one sentence: which filter or rule certifies what, under which mode.
        spent_meaning: what the spent figures are. Under a filter they measure the room used
            or reserved (the (ε, δ) of the all-Gaussian history that would use the same room);
            the guarantee for the released outputs is the budget itself, at any time.
        over_budget: True if the stored history exceeds the budget under this ledger's
            filter (an old ledger re-certified on opening).
        refusing: why every further spend is refused, or None.
        room: the filter's Gaussian-DP room μ² (after the block declared before the first
            spend), or None.
        room_used: μ² charged to that room (prepaid plans included), or None.
        basic_share: the basic share (ε, δ) fixed at creation (or, with
            ``basic_share="auto"``, at the first spend), or None.
        basic_share_used: what of it is charged, or None.
        open_commitments: committed plans with events left.
        sub_budget_pairs: the sub-budgets fixed at creation, (name, ε_i, δ_i) each (empty:
            none); each one's own status is ``acc.sub(name).remaining()``.
        rdp_share_pair: the Rényi share (ε_R, δ_R) fixed at creation, or None. The spent
            figures count it as reserved (it is part of the declared block); its own use is
            below.
        rdp_orders: the share's orders α_j (empty: no share).
        rdp_budgets: each order's Rényi budget B_j (rounded down; (α_j, B_j)-RDP converts to
            (ε_R, δ_R/k)-DP, k orders: Balle et al. 2020, arXiv:1905.09982, Thm. 21).
        rdp_used: Σρ_t(α_j) charged to each order (rounded up). A request is admitted while
            some order stays within its budget (Feldman & Zrnic 2021, arXiv:2008.11193,
            Thm. 3.1, at each order).
        rdp_used_fraction: the share's use at its order with the most left, min_j
            Σρ_t(α_j)/B_j over the orders with B_j > 0, at most 1 (None: no share).
    """

    budget_epsilon: float
    budget_delta: float
    spent_epsilon: float
    spent_delta: float
    remaining_epsilon: float
    remaining_delta: float
    count: int
    rule: str
    adaptivity: str = "fixed"
    certified_by: str = ""
    spent_meaning: str = ""
    over_budget: bool = False
    refusing: str | None = None
    room: float | None = None
    room_used: float | None = None
    basic_share: tuple[float, float] | None = None
    basic_share_used: tuple[float, float] | None = None
    open_commitments: int = 0
    sub_budget_pairs: tuple[tuple[str, float, float], ...] = ()
    rdp_share_pair: tuple[float, float] | None = None
    rdp_orders: tuple[float, ...] = ()
    rdp_budgets: tuple[float, ...] = ()
    rdp_used: tuple[float, ...] = ()
    rdp_used_fraction: float | None = None


@dataclass(frozen=True, slots=True)
class PlanResult:
    """Answer of :meth:`PrivacyAccountant.plan`: would these events fit?

    Attributes:
        fits: True if every event would be admitted, in order.
        status_after: the status after them (after the admitted ones, if some would not fit).
        reason: why the first refused event would be refused, or None.
    """

    fits: bool
    status_after: BudgetStatus
    reason: str | None = None


def fixed_reading(state: LedgerState, budget: tuple[float, float], composition: str,
                  filter_kind: FilterKind | None) -> tuple[float, float, str]:
    """(spent ε at δ_B, spent δ at ε_B, the rule's name) of the history as a declared
    sequence (the ledger's own rule, or ``"auto"`` under a filter)."""
    rule = composition if filter_kind is None else "auto"
    spent_delta, name = delta_at(state, budget[0], rule)
    spent_eps, _ = epsilon_at(state, budget[1], rule)
    return spent_eps, spent_delta, name

def filter_reading(f: FilterState, budget: tuple[float, float]) -> tuple[float, float]:
    """(spent ε at δ_B, spent δ at ε_B) of a filter's state, in closed form."""
    from approxdp.profiles.gaussian import gaussian_delta, gaussian_epsilon

    epsilon, delta = budget
    if f.kind == "basic":
        e, d = f.share_used
        spent_eps = float(e) if d <= Fraction(delta) else math.inf
        spent_delta = float(d) if e <= Fraction(epsilon) else 1.0
        return spent_eps, spent_delta
    m = gdp_equivalent(f, budget)
    if m <= 0.0:
        return 0.0, 0.0
    if not math.isfinite(m):
        return math.inf, 1.0
    sigma = sigma_from_rho(m)
    spent_delta = float(gaussian_delta(epsilon, sigma, 1.0))
    spent_eps = float(gaussian_epsilon(sigma, delta)) if delta > 0 else math.inf
    return spent_eps, spent_delta

def status_of(state: LedgerState, budget: tuple[float, float], composition: str,
              adaptivity: str, filter_kind: FilterKind | None) -> BudgetStatus:
    """The :class:`BudgetStatus` of a ledger's state under its mode and rule."""
    epsilon, delta = budget
    f = state.filter
    if f is None:
        spent_eps, spent_delta, rule = fixed_reading(state, budget, composition, filter_kind)
        return BudgetStatus(
            epsilon, delta, spent_eps, spent_delta,
            epsilon - spent_eps, delta - spent_delta, state.count, rule,
            adaptivity=adaptivity,
            certified_by=f"rule '{composition}': {rule}; " + _FIXED_PROMISE,
            spent_meaning="the (ε, δ) of the history as a declared sequence, under the rule",
        )
    title = accounting_rule(composition).title
    certified = (
        f"filter '{f.kind}' ({title}), fully adaptive: the whole interaction is "
        f"({epsilon:g}, {delta:g})-DP however each spend was chosen from "
        "earlier outputs, and whenever it stops"
    )
    meaning = (
        "room used or reserved by the filter, as the (ε, δ) of the all-Gaussian history "
        "that would use the same room; the guarantee for what was released is the budget"
        if f.kind == "gdp" else
        "Σεᵢ and Σδᵢ charged so far (basic composition); the guarantee is the budget"
    )
    if f.over is not None:
        spent_eps, spent_delta, how = fixed_reading(state, budget, composition, filter_kind)
        meaning = (f"the stored history as a declared sequence ({how}); under the filter "
                   "it exceeds the budget")
    else:
        spent_eps, spent_delta = filter_reading(f, budget)
    room = None
    if f.kind == "gdp":
        room = budget_rho(budget) if f.room is None else f.room
    return BudgetStatus(
        epsilon, delta, spent_eps, spent_delta,
        epsilon - spent_eps, delta - spent_delta, state.count, title,
        adaptivity="full" if adaptivity == "full" else "fixed",
        certified_by=certified, spent_meaning=meaning,
        over_budget=f.over is not None, refusing=f.over,
        room=room, room_used=f.gdp_used if f.kind == "gdp" else None,
        basic_share=None if f.share == (ZERO, ZERO) else
        (float(f.share[0]), float(f.share[1])),
        basic_share_used=None if f.share == (ZERO, ZERO) else
        (float(f.share_used[0]), float(f.share_used[1])),
        open_commitments=sum(1 for c in f.commitments if c.open),
        sub_budget_pairs=tuple((name, float(e), float(d)) for name, e, d in f.subs),
        **_rdp_fields(f),
    )


def _rdp_fields(f: FilterState) -> dict[str, Any]:
    """The Rényi share's fields of a :class:`BudgetStatus` (none without a share)."""
    if f.rdp is None:
        return {}
    share = f.rdp
    fractions = [u / b for u, b in zip(share.used, share.budgets, strict=True) if b > 0.0]
    return {"rdp_share_pair": (float(share.epsilon), float(share.delta)),
            "rdp_orders": share.orders, "rdp_budgets": share.budgets, "rdp_used": share.used,
            "rdp_used_fraction": min(1.0, min(fractions)) if fractions else 1.0}

def explain_text(state: LedgerState, s: BudgetStatus) -> str:
    """What certifies a ledger's total, in a few lines (for people): its state and status."""
    lines = [
        f"budget (ε, δ) = ({s.budget_epsilon:g}, {s.budget_delta:g}); {s.count} spend(s)",
        f"certified by: {s.certified_by}",
        f"spent: ε = {s.spent_epsilon:.6g} at δ = {s.budget_delta:g}, "
        f"δ = {s.spent_delta:.6g} at ε = {s.budget_epsilon:g}",
        f"  ({s.spent_meaning})",
    ]
    f = state.filter
    if f is not None and f.kind == "gdp":
        room = s.room if s.room is not None else 0.0
        lines.append(
            f"Gaussian-DP room: μ² = {f.gdp_used:.6g} used of {room:.6g}"
            + (" (exact Gaussian rule)" if f.room is None else
               " (after the block declared before the first spend)")
        )
        if f.declared:
            lines.append(f"declared before the first spend: {sum(c for _, c in f.declared)}"
                         " event(s), charged by their privacy-loss distribution")
        if f.pending_share is not None:
            lines.append(f"basic share (auto): (ε, δ) = ({float(f.pending_share[0]):g}, "
                         f"{float(f.pending_share[1]):g}), fixed at the first spend if it "
                         "fits with it")
        if s.basic_share is not None and s.basic_share_used is not None:
            lines.append(f"basic share: (ε, δ) = {s.basic_share}, used "
                         f"{s.basic_share_used}")
        if f.rdp is not None:
            order, used, total = rdp_left(f.rdp)
            lines.append(f"Rényi share (a Rényi filter, fixed at creation): (ε, δ) = "
                         f"({float(f.rdp.epsilon):g}, {float(f.rdp.delta):g}) at orders "
                         f"{', '.join(f'{a:g}' for a in f.rdp.orders)}; ρ = {used:.6g} used "
                         f"of {total:.6g} at α = {order:g}, its order with the most left")
            lines.append("  per order (α: ρ used of B): " + ", ".join(
                f"{a:g}: {u:.4g} of {b:.4g}" for a, u, b in
                zip(s.rdp_orders, s.rdp_used, s.rdp_budgets, strict=True)))
    elif f is not None:
        lines.append(f"basic composition: Σ(ε, δ) = ({float(f.share_used[0]):.6g}, "
                     f"{float(f.share_used[1]):.6g})")
    for c in () if f is None else f.commitments:
        state_word = "closed" if c.closed else "open" if c.open else "spent"
        lines.append(f"commitment #{c.id} {c.label!r} ({c.pricing}, {state_word}): "
                     f"{c.spent} of {sum(n for _, n in c.planned)} event(s) spent")
    if s.refusing is not None:
        lines.append(f"REFUSING SPENDS: {s.refusing}")
    return "\n".join(lines)
