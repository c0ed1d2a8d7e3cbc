"""Committed plans in the filter (:mod:`approxdp.accounting.budget.filter`): committing one
(before the first spend it joins the declared block and is charged by its curve; after it, its
parts are charged up front in the filter's currencies) and closing one early (refunds, or a
withdrawal while nothing has been spent). Why each is sound: the residue argument in
:mod:`approxdp.accounting.budget.filter` (Regehr et al. 2026, arXiv:2602.15815; f-DP
composition of curves fixed in advance: Dong et al. 2022, Sec. 3).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from fractions import Fraction

from approxdp.accounting.budget.filter_charge import (
    Charge,
    _refusal,
    _room_fits,
    _share_fits,
)
from approxdp.accounting.budget.filter_declare import (
    _declare,
    _first_fit,
    _merge,
    _share_options,
    _times_up,
)
from approxdp.accounting.budget.filter_parts import PartCost, _parts_of_key, part_costs
from approxdp.accounting.budget.filter_rdp import charge_rdp, rdp_charged
from approxdp.accounting.budget.filter_rooms import FilterRefusedError, declared_room
from approxdp.accounting.composition.costs import add_up
from approxdp.accounting.composition.filter_state import ZERO, Commitment, FilterState
from approxdp.accounting.serialization import event_key
from approxdp.errors import InvalidParameterError
from approxdp.events import PrivacyEvent

__all__ = ["admit_commit", "close_commitment"]


def admit_commit(state: FilterState, items: Sequence[tuple[PrivacyEvent, int]], label: str,
                 budget: tuple[float, float]) -> tuple[FilterState, Commitment, Charge]:
    """The filter's decision on committing a plan: (event, count) pairs whose parameters are
    fixed now, before any of their noise. Before the first spend the plan joins the declared
    block (charged by its curve); after it, its parts are charged up front."""
    if state.over is not None:
        raise FilterRefusedError(f"committing {label!r} is refused: {state.over}")
    what = f"committing plan {label!r}"
    planned = _merge((), ((event_key(ev), c) for ev, c in items))
    cid = len(state.commitments) + 1
    declared: tuple[FilterState, Charge] | None = None
    if state.pristine and state.kind == "gdp":
        flat = [(p, c) for ev, c in items for p in part_costs(ev)]
        try:
            declared = _first_fit(_share_options(state, budget),
                                  lambda s: _declare(s, flat, budget, what))
        except FilterRefusedError:
            if state.rdp is None:
                raise
            # as for a first spend: the Rényi share may take it, prepaid
            state = dataclasses.replace(state, pending_share=None)
    if declared is not None:
        new, charge = declared
        # its Gaussian parts are charged exactly to the room, like a prepaid plan's: their
        # prices are kept so that closing the plan early refunds the unspent ones
        gaussian = [(key, p.gdp, ZERO, ZERO) for key, _ in planned
                    for p in _parts_of_key(key) if p.gaussian and p.gdp]
        commitment = Commitment(cid, label, "declared", planned, planned,
                                _price_table(gaussian))
    else:
        new = state
        gdp, basic = 0.0, (ZERO, ZERO)
        prices = []
        for key, count in planned:
            for part in _parts_of_key(key):
                new, g_each, b_each = _charge_many(new, part, count, budget, what)
                gdp = add_up(gdp, _times_up(g_each, count))
                basic = (basic[0] + b_each[0] * count, basic[1] + b_each[1] * count)
                prices.append((key, g_each, b_each[0], b_each[1]))
        commitment = Commitment(cid, label, "prepaid", planned, planned, _price_table(prices))
        charge = Charge(gdp=gdp, basic=basic, rdp=rdp_charged(state, new))
    new = dataclasses.replace(new, commitments=(*new.commitments, commitment))
    return new, commitment, charge


def _price_table(prices: list[tuple[str, float, Fraction, Fraction]]) -> \
        tuple[tuple[str, float, Fraction, Fraction], ...]:
    out: dict[str, tuple[float, Fraction, Fraction]] = {}
    for key, g, e, d in prices:
        g0, e0, d0 = out.get(key, (0.0, ZERO, ZERO))
        out[key] = (add_up(g0, g), e0 + e, d0 + d)
    return tuple((k, *v) for k, v in sorted(out.items()))


def _charge_many(state: FilterState, part: PartCost, count: int, budget: tuple[float, float],
                 what: str) -> tuple[FilterState, float, tuple[Fraction, Fraction]]:
    """``count`` copies of one part, all to the room, all to the basic share (per-copy price)
    or all to the Rényi share (no price kept: not refunded if the plan is closed early, an
    over-count only)."""
    if part.subsampled and state.rdp is not None:
        rdp_first = charge_rdp(state, part.key, count)
        if rdp_first is not None:
            return rdp_first, 0.0, (ZERO, ZERO)
    if part.gdp is not None and state.kind == "gdp":
        total = _times_up(part.gdp, count)
        trial = dataclasses.replace(state, gdp_used=add_up(state.gdp_used, total))
        if _room_fits(trial, budget):
            return trial, part.gdp, (ZERO, ZERO)
    if part.basic is not None and state.share != (ZERO, ZERO):
        used = (state.share_used[0] + part.basic[0] * count,
                state.share_used[1] + part.basic[1] * count)
        trial = dataclasses.replace(state, share_used=used)
        if _share_fits(trial):
            return trial, 0.0, part.basic
    in_rdp = None if part.subsampled else charge_rdp(state, part.key, count)
    if in_rdp is not None:
        return in_rdp, 0.0, (ZERO, ZERO)
    many = dataclasses.replace(part, gdp=None if part.gdp is None else
                               _times_up(part.gdp, count),
                               basic=None if part.basic is None else
                               (part.basic[0] * count, part.basic[1] * count))
    copies = f" ({count} copies)" if count > 1 else ""
    raise FilterRefusedError(_refusal(state, many, budget, what) + copies)


def close_commitment(state: FilterState, cid: int,
                     budget: tuple[float, float] | None = None) -> tuple[FilterState, Charge]:
    """Close plan ``cid``: a prepaid plan's unspent events are refunded (its prepaid room was
    still room, so the residue does not change). A declared plan's unspent Gaussian parts are
    refunded alike (they were charged exactly to the room: G_ν' ⊗ G_μ = G_ν, Dong et al.
    2022, Sec. 3) and its other parts are given up (the block's curve cannot become Gaussian
    room) — unless nothing has been spent yet (the ledger is still pristine) and ``budget`` is
    given: then the plan is withdrawn, as if never committed (:func:`_withdraw`)."""
    for i, c in enumerate(state.commitments):
        if c.id != cid:
            continue
        if c.closed:
            raise InvalidParameterError(f"commitment #{cid} ({c.label!r}) is already closed")
        if c.pricing == "declared" and state.pristine and budget is not None:
            withdrawn = _withdraw(state, cid, budget)
            if withdrawn is not None:
                return withdrawn
        new = state
        refund_g, refund_b = 0.0, (ZERO, ZERO)
        if c.prices:  # a prepaid plan's prices, or a declared plan's Gaussian parts
            left = dict(c.remaining)
            for key, g, e, d in c.prices:
                n = left.get(key, 0)
                if n:
                    g_down = g * n
                    if g_down > 0.0:
                        g_down = math.nextafter(g_down, 0.0)  # refund rounded down
                    refund_g += g_down
                    refund_b = (refund_b[0] + e * n, refund_b[1] + d * n)
            gdp = max(0.0, math.nextafter(state.gdp_used - refund_g, math.inf)) \
                if refund_g > 0 else state.gdp_used
            new = dataclasses.replace(
                state, gdp_used=gdp,
                share_used=(state.share_used[0] - refund_b[0],
                            state.share_used[1] - refund_b[1]),
            )
        updated = dataclasses.replace(c, closed=True)
        commits = (*new.commitments[:i], updated, *new.commitments[i + 1:])
        return dataclasses.replace(new, commitments=commits), \
            Charge(gdp=-refund_g, basic=(-refund_b[0], -refund_b[1]), commitment=cid)
    raise InvalidParameterError(f"this ledger has no commitment #{cid}")


def _withdraw(state: FilterState, cid: int, budget: tuple[float, float]) -> \
        tuple[FilterState, Charge] | None:
    """Withdraw declared plan ``cid`` from a pristine filter: the state rebuilt from the
    creation (basic share included) with every other open declared plan declared again, in
    order; with none left, the state at creation (an ``"auto"`` share pending again). Sound
    because no noise has been drawn since the ledger was created (``pristine``: no spend at
    all), so no output can depend on the declaration: the residue argument starts from the
    state as it is at the first spend (module docstring), and the withdrawn plan is not part
    of it. None if the others do not fit again (numerically possible only at the room
    search's tolerance): the plan is then given up as after a first spend."""
    others = [c for c in state.commitments
              if c.id != cid and not c.closed and c.pricing == "declared"]
    if not others and state.auto_share is not None:  # back to the state at creation
        rebuilt = FilterState(kind=state.kind, pending_share=state.auto_share,
                              auto_share=state.auto_share, commitments=state.commitments,
                              over=state.over, rdp=state.rdp, subs=state.subs)
        if state.fixed_pairs:
            rebuilt = dataclasses.replace(
                rebuilt, room=declared_room(budget, (), rebuilt.share, state.fixed_pairs))
        commits = tuple(dataclasses.replace(c, closed=True) if c.id == cid else c
                        for c in state.commitments)
        return dataclasses.replace(rebuilt, commitments=commits), \
            Charge(gdp=-state.gdp_used, commitment=cid)
    rebuilt = FilterState(kind=state.kind, share=state.share, commitments=state.commitments,
                          over=state.over, auto_share=state.auto_share, rdp=state.rdp,
                          subs=state.subs)
    if state.share != (ZERO, ZERO) or state.fixed_pairs:
        rebuilt = dataclasses.replace(
            rebuilt, room=declared_room(budget, (), state.share, state.fixed_pairs))
    try:
        for c in others:
            flat = [(p, n) for key, n in c.planned for p in _parts_of_key(key)]
            rebuilt, _ = _declare(rebuilt, flat, budget, f"committing plan {c.label!r}")
    except FilterRefusedError:
        return None
    commits = tuple(dataclasses.replace(c, closed=True) if c.id == cid else c
                    for c in state.commitments)
    refund = max(state.gdp_used - rebuilt.gdp_used, 0.0)
    return dataclasses.replace(rebuilt, commitments=commits), \
        Charge(gdp=-refund, commitment=cid)
