"""Sub-budgets: ledgers of their own, fixed when a
:class:`~approxdp.accounting.PrivacyAccountant` is created (``sub_budgets=``).

Each sub-budget is a valid filter on its (ε_i, δ_i), so an (ε_i, δ_i)-DP interactive
mechanism; run concurrently with the main ledger they compose as their curves do (concurrent
composition: Vadhan & Zhang 2023, arXiv:2207.08335; filters inside: Haney et al. 2023,
arXiv:2309.05901), so each enters the main ledger's block declared at creation as an
(ε_i, δ_i) event, checked once by certified PLD
(:func:`~approxdp.accounting.budget.filter.new_filter`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from approxdp.accounting.budget.arguments import check_budget
from approxdp.errors import InvalidParameterError, ParameterTypeError

__all__ = ["SUB_BUDGET_KEYS", "sub_ledgers"]

A = TypeVar("A")

#: The keys a sub-budget's mapping may have (``budget`` is required).
SUB_BUDGET_KEYS = frozenset({"budget", "composition", "basic_share", "rdp_share", "rdp_orders",
                             "sub_budgets"})


def sub_ledgers(specs: Any, ledger: object, composition: str, budget: tuple[float, float],
               make: Callable[..., A]) -> dict[str, A]:
    """The sub-budgets' ledgers (checked), by name (empty: none): ``make(**kwargs)`` (a
    :class:`~approxdp.accounting.PrivacyAccountant`) with each one's keyword arguments."""
    if specs is None:
        return {}
    if not isinstance(specs, Mapping) or not specs:
        raise ParameterTypeError(
            "sub_budgets must be a non-empty mapping {name: (epsilon, delta)} or {name: "
            f"{{'budget': (epsilon, delta), ...}}}}, got sub_budgets={specs!r}"
        )
    if composition != "gdp":
        raise InvalidParameterError(
            f"sub_budgets are shares of the 'gdp' filter's budget; composition="
            f"{composition!r} has none"
        )
    if ledger is not None:
        raise InvalidParameterError(
            "sub_budgets are for an in-memory budget in this version: a ledger file cannot "
            f"store them yet (got ledger={ledger!r})"
        )
    out: dict[str, A] = {}
    allowed = SUB_BUDGET_KEYS
    for name, spec in specs.items():
        if not isinstance(name, str) or not name:
            raise ParameterTypeError(
                f"sub_budgets names must be non-empty strings, got {name!r}"
            )
        kwargs = dict(spec) if isinstance(spec, Mapping) else {"budget": spec}
        if "budget" not in kwargs or not set(kwargs) <= allowed:
            raise InvalidParameterError(
                f"sub_budgets[{name!r}] must be an (epsilon, delta) pair or a mapping with "
                f"'budget' and any of {sorted(allowed - {'budget'})}, got {spec!r}"
            )
        eps_i, delta_i = check_budget(kwargs["budget"])
        if eps_i > budget[0] or delta_i > budget[1]:
            raise InvalidParameterError(
                f"sub_budgets[{name!r}] = ({eps_i:g}, {delta_i:g}) is not within the "
                f"budget ({budget[0]:g}, {budget[1]:g})"
            )
        out[name] = make(**kwargs)
    return out
