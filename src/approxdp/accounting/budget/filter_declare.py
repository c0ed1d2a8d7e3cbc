"""The block a ``"gdp"`` filter declares before its first spend
(:mod:`approxdp.accounting.budget.filter`): plans committed while nothing has been spent, the
first spend's own non-Gaussian parts, the shares fixed at creation. No noise has been drawn,
so the block is a fixed sequence and the Gaussian-DP room after it is the largest ν for which
the certified PLD of the block plus one Gaussian of μ = ν is (ε_B, δ_B)-DP (the residue
argument of Regehr et al. 2026, arXiv:2602.15815; :func:`~.filter_rooms.declared_room`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence

from approxdp.accounting.budget.filter_charge import Charge, _room_fits
from approxdp.accounting.budget.filter_parts import PartCost
from approxdp.accounting.budget.filter_rooms import (
    FilterRefusedError,
    budget_rho,
    declared_room,
)
from approxdp.accounting.composition.costs import add_up
from approxdp.accounting.composition.filter_state import FilterState

__all__: list[str] = []


def _merge(pairs: Iterable[tuple[str, int]], more: Iterable[tuple[str, int]]) -> \
        tuple[tuple[str, int], ...]:
    out = dict(pairs)
    for k, c in more:
        out[k] = out.get(k, 0) + c
    return tuple(sorted(out.items()))


def _times_up(value: float, count: int) -> float:
    """value × count rounded up (exact for count = 1)."""
    return value if count == 1 or value == 0.0 else math.nextafter(value * count, math.inf)


def _declare(state: FilterState, parts: Sequence[tuple[PartCost, int]],
             budget: tuple[float, float], what: str) -> tuple[FilterState, Charge]:
    """Add parts to the declared block (pristine ledger): Gaussians are charged exactly to the
    room, the rest join the block and the room is certified again."""
    gdp = 0.0
    block: list[tuple[str, int]] = []
    for part, count in parts:
        if part.gaussian:
            gdp = add_up(gdp, _times_up(part.gdp or 0.0, count))
        else:
            block.append((part.key, count))
    declared = _merge(state.declared, block) if block else state.declared
    room = state.room
    if block:
        try:
            room = declared_room(budget, declared, state.share, state.fixed_pairs)
        except FilterRefusedError as exc:
            raise FilterRefusedError(f"{what} does not fit: {exc}") from None
    trial = dataclasses.replace(state, declared=declared, room=room,
                                gdp_used=add_up(state.gdp_used, gdp))
    if not _room_fits(trial, budget):
        raise FilterRefusedError(
            f"{what} does not fit the budget ({budget[0]:g}, {budget[1]:g}) under filter "
            f"'gdp': declared before the first spend, its Gaussian parts need μ² = "
            f"{trial.gdp_used:.6g} but the room left after the declared block is "
            f"{(budget_rho(budget) if room is None else room):.6g}"
        )
    return trial, Charge(gdp=gdp, declared=tuple(block))


def _share_options(state: FilterState, budget: tuple[float, float]) -> list[FilterState]:
    """The states a pristine filter may decide from: with a pending basic share, first the
    share fixed now (it joins the declared block and sets the room), then none. The choice
    is made at the first spend or commitment, before any noise is drawn, from that request's
    own parameters only, so the share is as fixed in advance as one given at creation: the
    residue argument (module docstring) starts from the state so chosen."""
    if state.pending_share is None:
        return [state]
    share = state.pending_share
    without = dataclasses.replace(state, pending_share=None)
    try:
        room = declared_room(budget, state.declared, share, state.fixed_pairs)
    except FilterRefusedError:  # the share does not fit with a Rényi share: none
        return [without]
    return [dataclasses.replace(state, pending_share=None, share=share, room=room), without]


def _first_fit(options: list[FilterState],
               decide: Callable[[FilterState], tuple[FilterState, Charge]]) -> \
        tuple[FilterState, Charge]:
    """``decide`` on the first of ``options`` where it fits (the last one's refusal
    otherwise)."""
    *first, last = options
    for option in first:
        with contextlib.suppress(FilterRefusedError):
            return decide(option)
    return decide(last)
