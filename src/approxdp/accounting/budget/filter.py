"""The ledger as a privacy filter: what stays certified when the analyst adapts.

A *privacy filter* (Rogers et al. 2016, arXiv:1605.08294) is a stopping rule: the analyst picks
each release and its privacy parameters after seeing earlier outputs, the filter admits or
refuses it before its noise is drawn, and the whole interaction — however it adapts and
whenever it stops — is (ε_B, δ_B)-DP. Composition theorems for declared sequences are not
automatically filters (the natural PLD / f-DP filter is invalid: Honkela et al. 2026,
arXiv:2602.06756; Regehr et al. 2026, arXiv:2602.15815).

**The residue argument** (the structure of Regehr et al. 2026's residue filters). Write f ≥ g
for trade-off curves (f at least as private). Let R_t be a curve, the *residue*, fixed before
step t+1's noise is drawn (it may depend on every earlier output). If step t+1 runs a mechanism
whose trade-off curve is ≥ T and the filter chooses the next residue R_{t+1} — again before the
noise — with T ⊗ R_{t+1} ≥ R_t, then by induction from the last step (stopping is the identity
mechanism, always admissible) the rest of the interaction from step t is R_t-DP: the next step
is T-DP and, for *every* one of its outputs, the remainder is R_{t+1}-DP with R_{t+1} fixed
beforehand, and f-DP composes for mechanisms chosen adaptively when the curves are fixed in
advance (Dong et al. 2022, Sec. 3; interactive remainders: Vadhan & Zhang 2023,
arXiv:2207.08335). With R_0 the budget curve f_{ε_B, δ_B}, the interaction is (ε_B, δ_B)-DP.
A filter is then a rule for the residues; what breaks natural filters is a residue chosen
*after* the output it depends on.

**This filter (``"gdp"``).** Residues are products of three parts, each fixed before the noise
it covers:

- **Gaussian-DP room** G_ν: a step that is μ-GDP leaves ν'² = ν² − μ² (G_μ ⊗ G_ν' = G_ν; Smith
  & Thakurta 2022, arXiv:2210.17520, prove this filter directly). Gaussian releases are charged
  exactly μ² = Δ²/σ², pure-ε events their least dominating μ²
  (:mod:`~approxdp.accounting.budget.gdp`), a subsampled Gaussian the μ² of its Gaussian (a
  subsampled mechanism is never less private than the mechanism itself).
- **A block declared before the first spend**: plans committed while nothing has been spent,
  and the first spend's own non-Gaussian parts. No noise has been drawn, so the block D is a
  fixed sequence: the room after it is the largest ν with T(D) ⊗ G_ν ≥ f_{ε_B, δ_B}, i.e. the
  largest ν for which the certified PLD of D plus one Gaussian of μ = ν is (ε_B, δ_B)-DP. A
  DP-SGD run committed first therefore costs what its privacy-loss distribution says, not its
  Gaussian-DP domination (which is worthless: near α → 0 its curve is its un-subsampled
  Gaussian's, so T steps would cost T·μ²). With nothing non-Gaussian declared, the room is
  exactly the Gaussian rule's: a spend fits iff δ_G(ε_B; σ* = (Σμᵢ²)^(−1/2)) ≤ δ_B.
- **A basic share** (ε_A, δ_A) fixed when the ledger is created, for events with δ > 0 that
  no Gaussian dominates (truncated Laplace, partition selection, a discrete Gaussian's
  calibrated (ε, δ)): charged by basic composition Σεᵢ ≤ ε_A, Σδᵢ ≤ δ_A (f_{ε,δ} ⊗
  f_{ε_A−ε, δ_A−δ} ≥ f_{ε_A, δ_A}: Rogers et al. 2016's basic filter). The share is part of the
  declared block (an ``EpsilonDeltaEvent(ε_A, δ_A)`` in the PLD that sets the room).

Plans committed after the first spend are charged in the same currencies up front (and
refunded if closed early: the residue is unchanged, since the plan's prepaid room was still
room). Plans in the declared block are charged by their curve; closing one early refunds its
unspent Gaussian parts (charged exactly to the room, like a prepaid plan's) and gives the rest
back only while nothing has been spent (then the plan is withdrawn: no noise has been drawn
that could depend on it); after the first spend its other parts cannot be turned into
Gaussian room.

**Why no δ reserve by default, and what that costs.** Suppose the filter admitted all-Gaussian
histories up to the exact Gaussian rule (as it does) and also, after a first Gaussian spend, a
continuation C whose privacy profile is above the remaining Gaussian's somewhere — an event with
δ > 0, or a DP-SGD run priced below its Gaussian domination. An analyst who runs C when the
first output's privacy loss L₁ is very negative and the Gaussian otherwise gets
δ(ε_B) = δ_B + E[1{L₁ < −K}(δ_C − δ_G)(ε_B − L₁)] > δ_B: the all-Gaussian path already meets
the budget with equality, so any such switch overspends. A valid filter that keeps §2's
all-Gaussian admission must therefore refuse such events after the first noise draw unless a
share for them was fixed before it (the basic share, or the declared block).

**The ``"basic"`` filter** is Rogers et al. 2016's: every event is charged its own (ε, δ) and
Σεᵢ ≤ ε_B, Σδᵢ ≤ δ_B; a Gaussian event has no (ε, δ) of its own and is refused (describe it as
an ``EpsilonDeltaEvent`` at the δ you choose, or use ``"gdp"``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from fractions import Fraction

from approxdp.accounting.budget.filter_charge import (
    Charge,
    _refusal,
    _room_fits,
    _share_fits,
)
from approxdp.accounting.budget.filter_commit import admit_commit, close_commitment
from approxdp.accounting.budget.filter_declare import _declare, _first_fit, _share_options
from approxdp.accounting.budget.filter_parts import PartCost, part_costs
from approxdp.accounting.budget.filter_rdp import charge_rdp, rdp_charged
from approxdp.accounting.budget.filter_rooms import (
    FilterRefusedError,
    budget_rho,
    declared_room,
    gdp_equivalent,
)
from approxdp.accounting.composition.costs import add_up
from approxdp.accounting.composition.filter_state import (
    FILTERS,
    ZERO,
    Commitment,
    FilterKind,
    FilterState,
    RdpShare,
)
from approxdp.accounting.serialization import event_key
from approxdp.errors import InvalidParameterError
from approxdp.events import PrivacyEvent

__all__ = [
    "FILTERS",
    "Charge",
    "Commitment",
    "FilterKind",
    "FilterRefusedError",
    "FilterState",
    "PartCost",
    "admit_commit",
    "admit_spend",
    "budget_rho",
    "close_commitment",
    "declared_room",
    "gdp_equivalent",
    "new_filter",
    "part_costs",
    "replay",
]


# -- the state ------------------------------------------------------------------------------


def new_filter(kind: FilterKind, budget: tuple[float, float],
               share: tuple[float, float] | None = None, *,
               pending: tuple[float, float] | None = None,
               rdp: RdpShare | None = None,
               subs: tuple[tuple[str, Fraction, Fraction], ...] = ()) -> FilterState:
    """The state of a new ledger: the ``"basic"`` filter's share is the whole budget; the
    ``"gdp"`` filter's basic share (if any) is declared now and sets the room. ``pending``:
    a basic share to fix at the first spend or commitment instead, if it fits then with what
    is admitted (:func:`_share_options`); exclusive with ``share``. ``rdp``: a Rényi share
    (:mod:`~approxdp.accounting.budget.filter_rdp`), declared now: it sets the room too, as do
    the sub-budgets ``subs`` ((name, ε_i, δ_i): each an (ε_i, δ_i)-DP ledger of its own, run
    concurrently with this one; Vadhan & Zhang 2023, arXiv:2207.08335)."""
    if rdp is not None or subs:
        option = "rdp_share" if rdp is not None else "sub_budgets"
        if kind != "gdp":
            raise InvalidParameterError(
                f"{option} is a share of the 'gdp' filter's budget; the 'basic' filter has none"
            )
        start = dataclasses.replace(new_filter(kind, budget, share, pending=pending), rdp=rdp,
                                    subs=subs)
        try:
            room = declared_room(budget, (), start.share, start.fixed_pairs)
        except FilterRefusedError as exc:
            fixed = ", ".join(f"({float(e):g}, {float(d):g})" for e, d in start.fixed_pairs)
            raise InvalidParameterError(
                f"the shares fixed at creation ({option}: {fixed}) do not fit the budget "
                f"{budget} together with the basic share: {exc}"
            ) from None
        if not subs:
            return dataclasses.replace(start, room=room)
        # Sub-budgets are ledgers of their own: their noise may be drawn before this ledger's
        # first spend, so this ledger's block must not grow after creation (its curve, in the
        # concurrent composition, is fixed now): it starts past its first spend, and an
        # "auto" basic share is decided now.
        start = dataclasses.replace(start, room=room, pristine=False)
        if start.pending_share is not None:
            options = _share_options(dataclasses.replace(start, pristine=True), budget)
            start = dataclasses.replace(options[0], pristine=False)
        return start
    if pending is not None and pending != (0.0, 0.0):
        if kind != "gdp" or share is not None:
            raise InvalidParameterError(
                "a pending basic share is for a 'gdp' filter without a fixed basic_share"
            )
        if not (0.0 <= pending[0] <= budget[0] and 0.0 <= pending[1] <= budget[1]):
            raise InvalidParameterError(
                f"basic_share must be an (epsilon, delta) within the budget {budget}, got "
                f"basic_share={pending}"
            )
        auto = (Fraction(pending[0]), Fraction(pending[1]))
        return FilterState(pending_share=auto, auto_share=auto)
    if kind == "basic":
        if share is not None:
            raise InvalidParameterError(
                "basic_share is for the 'gdp' filter; under 'basic' the whole budget is one "
                "basic share already"
            )
        return FilterState(kind="basic", pristine=False, room=0.0,
                           share=(Fraction(budget[0]), Fraction(budget[1])))
    if share is None or share == (0.0, 0.0):
        return FilterState()
    eps_a, delta_a = share
    if not (0.0 <= eps_a <= budget[0] and 0.0 <= delta_a <= budget[1]):
        raise InvalidParameterError(
            f"basic_share must be an (epsilon, delta) within the budget {budget}, got "
            f"basic_share={share}"
        )
    state = FilterState(share=(Fraction(eps_a), Fraction(delta_a)))
    return dataclasses.replace(state, room=declared_room(budget, (), state.share))


# -- admission -----------------------------------------------------------------------------


def _charge_part(state: FilterState, part: PartCost, budget: tuple[float, float],
                 what: str) -> tuple[FilterState, float, tuple[Fraction, Fraction]]:
    """Charge one part to the room if it fits there, else to the basic share, else to the
    Rényi share (a subsampled Gaussian: to the Rényi share first, where it is charged its
    amplified divergence); refuse otherwise (with the reason)."""
    if part.subsampled and state.rdp is not None:
        rdp_first = charge_rdp(state, part.key)
        if rdp_first is not None:
            return rdp_first, 0.0, (ZERO, ZERO)
    if part.gdp is not None and state.kind == "gdp":
        trial = dataclasses.replace(state, gdp_used=add_up(state.gdp_used, part.gdp))
        if _room_fits(trial, budget):
            return trial, part.gdp, (ZERO, ZERO)
    if part.basic is not None and state.share != (ZERO, ZERO):
        used = (state.share_used[0] + part.basic[0], state.share_used[1] + part.basic[1])
        trial = dataclasses.replace(state, share_used=used)
        if _share_fits(trial):
            return trial, 0.0, part.basic
    in_rdp = None if part.subsampled else charge_rdp(state, part.key)
    if in_rdp is not None:
        return in_rdp, 0.0, (ZERO, ZERO)
    raise FilterRefusedError(_refusal(state, part, budget, what))


def _take_from_commitment(state: FilterState, key: str) -> tuple[FilterState, int] | None:
    for i, c in enumerate(state.commitments):
        if c.closed:
            continue
        left = dict(c.remaining)
        if left.get(key, 0) > 0:
            left[key] -= 1
            updated = dataclasses.replace(c, remaining=tuple(left.items()))
            commits = (*state.commitments[:i], updated, *state.commitments[i + 1:])
            return dataclasses.replace(state, commitments=commits), c.id
    return None


def admit_spend(state: FilterState, event: PrivacyEvent, budget: tuple[float, float]) -> \
        tuple[FilterState, Charge]:
    """The filter's decision on spending ``event`` (before its noise is drawn): the new state
    and how it was charged; raises :class:`FilterRefusedError` (nothing changes) if it does not
    fit."""
    what = f"spending {event!r}"
    if state.over is not None:
        raise FilterRefusedError(f"{what} is refused: {state.over}")
    key = event_key(event)
    taken = _take_from_commitment(state, key)
    if taken is not None:
        new, cid = taken
        return dataclasses.replace(new, pristine=False), Charge(commitment=cid)
    parts = part_costs(event)
    if state.pristine and state.kind == "gdp":
        try:
            new, charge = _first_fit(_share_options(state, budget),
                                     lambda s: _declare(s, [(p, 1) for p in parts], budget,
                                                        what))
            return dataclasses.replace(new, pristine=False), charge
        except FilterRefusedError:
            if state.rdp is None:
                raise
            # the Rényi share may take what the declared block cannot (it is valid from any
            # state); a pending basic share is then dropped, as when the request does not
            # fit with it
            state = dataclasses.replace(state, pending_share=None)
    gdp, basic = 0.0, (ZERO, ZERO)
    new = dataclasses.replace(state, pristine=False)
    for part in parts:
        new, g, b = _charge_part(new, part, budget, what)
        gdp = add_up(gdp, g)
        basic = (basic[0] + b[0], basic[1] + b[1])
    return new, Charge(gdp=gdp, basic=basic, rdp=rdp_charged(state, new))


def replay(kind: FilterKind, budget: tuple[float, float], share: tuple[float, float] | None,
           events: Sequence[PrivacyEvent], *, legacy_rule: str | None = None) -> \
        tuple[FilterState, list[str]]:
    """Re-certify a stored history under a filter: each event spent again, in order, from a new
    filter. Returns the state and each spend's charge (JSON). If an event does not fit, the
    state says so (``over``: why, and what the user can do) and the rest are not charged."""
    state = new_filter(kind, budget, share)
    charges: list[str] = []
    for i, event in enumerate(events, start=1):
        if state.over is not None:
            charges.append(json.dumps({"not_charged": "after a refused spend"}))
            continue
        try:
            state, charge = admit_spend(state, event, budget)
            charges.append(charge.to_json())
        except FilterRefusedError as exc:
            rule = f" (its rule was {legacy_rule!r})" if legacy_rule else ""
            state = dataclasses.replace(state, over=(
                f"this ledger's stored history exceeds its budget ({budget[0]:g}, "
                f"{budget[1]:g}) under filter '{kind}' (fully adaptive), re-certified when it "
                f"was opened: spend #{i} of {len(events)} does not fit ({exc}). Every row is "
                "kept. Spends are refused until you decide: if every stored spend's parameters "
                "were fixed before any noise was drawn, reopen the ledger with "
                f"adaptivity='fixed'{rule} to declare it; otherwise keep the file as a record "
                "and start a new ledger"
            ))
            charges.append(json.dumps({"refused": str(exc)}))
    return state, charges
