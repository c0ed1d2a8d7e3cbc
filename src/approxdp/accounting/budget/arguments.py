"""Checking what a :class:`~approxdp.accounting.PrivacyAccountant` is given: its budget, basic
share (``"auto"`` included), Rényi share, mode and rule, and the events of a plan to commit."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from approxdp._validation import check_interval, check_parameter
from approxdp.accounting.budget.filter_rdp import new_rdp_share
from approxdp.accounting.composition.filter_state import RdpShare
from approxdp.accounting.composition.rules import COMPOSITION_RULES
from approxdp.accounting.registry import ADAPTIVITY_MODES, accounting_rule, rule_names
from approxdp.accounting.serialization import event_key
from approxdp.errors import (
    InvalidParameterError,
    ParameterTypeError,
    UnknownMethodError,
)
from approxdp.events import PrivacyEvent

__all__ = [
    "auto_share",
    "check_budget",
    "check_rdp_share",
    "check_share",
    "plan_items",
    "reopened_budget",
    "resolve_mode",
    "resolve_share",
]


def check_budget(budget: Any) -> tuple[float, float]:
    try:
        eps_raw, delta_raw = budget
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"budget must be an (epsilon, delta) pair, got budget={budget!r}"
        ) from exc
    eps = float(check_parameter("budget epsilon", eps_raw, "epsilon"))
    delta = float(check_parameter("budget delta", delta_raw, "delta_cost"))
    return eps, delta


def check_share(share: Any, budget: tuple[float, float]) -> tuple[float, float] | None:
    if share is None:
        return None
    try:
        eps_raw, delta_raw = share
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"basic_share must be an (epsilon, delta) pair, got basic_share={share!r}"
        ) from exc
    eps = float(check_interval("basic_share epsilon", eps_raw, 0.0, budget[0]))
    delta = float(check_interval("basic_share delta", delta_raw, 0.0, budget[1]))
    return (eps, delta)


def plan_items(events: Iterable[Any]) -> list[tuple[PrivacyEvent, int]]:
    """Events, or (event, count) pairs, merged into (event, count) pairs in first-seen order."""
    if isinstance(events, PrivacyEvent):
        events = [events]
    out: dict[str, tuple[PrivacyEvent, int]] = {}
    for i, item in enumerate(events):
        if isinstance(item, PrivacyEvent):
            event, count = item, 1
        elif isinstance(item, tuple | list) and len(item) == 2:
            event, count = item
            if not isinstance(event, PrivacyEvent):
                raise ParameterTypeError(
                    f"events[{i}] must be a PrivacyEvent or an (event, count) pair, got "
                    f"{type(event).__name__}"
                )
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise InvalidParameterError(
                    f"events[{i}]: count must be an integer >= 1, got count={count!r}"
                )
        else:
            raise ParameterTypeError(
                f"events[{i}] must be a PrivacyEvent or an (event, count) pair, got "
                f"{type(item).__name__}"
            )
        key = event_key(event)
        prev = out.get(key)
        out[key] = (event, count + (prev[1] if prev else 0))
    if not out:
        raise InvalidParameterError("events must name at least one event to commit")
    return list(out.values())


def resolve_mode(settings: Any, adaptivity: str | None, composition: str | None,
                 delta: float) -> tuple[str, str]:
    """(adaptivity, composition): the explicit ones, else the stored ones, else defaults
    ("full" and "gdp" — "basic" for a pure-ε budget, δ = 0, where no Gaussian fits;
    "fixed" defaults to "auto", or to an old file's own rule)."""
    if adaptivity is not None and adaptivity not in ADAPTIVITY_MODES:
        raise UnknownMethodError(
            f"adaptivity must be one of {ADAPTIVITY_MODES}, got adaptivity={adaptivity!r}"
        )
    stored_mode = None if settings is None else settings.adaptivity
    stored_rule = None if settings is None else settings.composition
    legacy_rule = None if settings is None else settings.legacy_composition
    if adaptivity is None:
        adaptivity = stored_mode or "full"
    if composition is None:
        if stored_mode == adaptivity and stored_rule is not None:
            composition = stored_rule
        elif adaptivity == "fixed":
            composition = legacy_rule or "auto"
        else:
            composition = "gdp" if delta > 0.0 else "basic"
    if composition not in COMPOSITION_RULES:
        raise UnknownMethodError(
            f"composition must be one of {COMPOSITION_RULES}, got composition={composition!r}"
        )
    if composition == "gdp" and delta <= 0.0:
        raise InvalidParameterError(
            "composition='gdp' needs a budget delta > 0 (no Gaussian release is "
            "(epsilon, 0)-DP); a pure-epsilon budget is a basic filter: composition='basic'"
        )
    if adaptivity == "full" and not accounting_rule(composition, "ledger").filter_valid:
        raise InvalidParameterError(
            f"composition={composition!r} is not a valid privacy filter when spends are "
            "chosen after earlier outputs (" + accounting_rule(composition).adaptivity_source
            + f"); use one of {rule_names('ledger', 'full')}, or pass adaptivity='fixed' "
            "to promise that every spend's parameters are fixed before any noise is drawn"
        )
    return adaptivity, composition


def check_rdp_share(share: Any, orders: Any, composition: str,
                    budget: tuple[float, float]) -> RdpShare | None:
    """The Rényi share asked for (checked), or None."""
    if share is None:
        if orders is not None:
            raise InvalidParameterError(
                "rdp_orders sets the orders of a Rényi share: pass rdp_share=(epsilon, "
                f"delta) with it (got rdp_orders={orders!r} and no rdp_share)"
            )
        return None
    if composition != "gdp":
        raise InvalidParameterError(
            f"rdp_share is a share of the 'gdp' filter's budget; composition="
            f"{composition!r} has none (got rdp_share={share!r})"
        )
    return new_rdp_share(share, orders, budget)


def auto_share(share: str, ledger: object, composition: str, delta: float,
               fraction: float) -> tuple[float, float] | None:
    """The pending share of ``basic_share="auto"``: (0, ``fraction`` · δ) (None where the
    rule has no share)."""
    if share != "auto":
        raise InvalidParameterError(
            f"basic_share must be an (epsilon, delta) pair, None or 'auto', got "
            f"basic_share={share!r}"
        )
    if ledger is not None:
        raise InvalidParameterError(
            "basic_share='auto' is for an in-memory budget; a ledger file fixes its basic "
            "share when it is created: pass basic_share=(epsilon, delta)"
        )
    if composition != "gdp":
        return None
    return (0.0, delta * fraction)


def reopened_budget(budget: Any, settings: Any, ledger: object) -> Any:
    """``budget``, or (None) the budget stored in the ledger file being reopened
    (``settings``: its :class:`~approxdp.accounting.budget.sqlite_files.LedgerSettings`)."""
    if budget is None:  # reopen an existing ledger with the budget stored in it
        if settings is None:
            raise ParameterTypeError(
                "budget=(epsilon, delta) is required unless ledger= names an existing "
                f"ledger file (got ledger={ledger!r})"
            )
        budget = settings.budget
    return budget


def resolve_share(basic_share: Any, settings: Any, ledger: object, composition: str,
                  budget: tuple[float, float], fraction: float,
                  ) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """The basic share (checked within ``budget``; a reopened file's stored one when none is
    given) and the pending share of ``basic_share="auto"`` (:func:`auto_share`).

    Raises:
        InvalidParameterError: a share outside the budget, or a share under a rule other
            than ``"gdp"``.
    """
    pending = None
    if isinstance(basic_share, str):
        pending = auto_share(basic_share, ledger, composition, budget[1], fraction)
        basic_share = None
    if basic_share is None and settings is not None:
        basic_share = settings.basic_share
    share = check_share(basic_share, budget)
    if share is not None and composition != "gdp":
        raise InvalidParameterError(
            f"basic_share is a share of the 'gdp' filter's budget; composition="
            f"{composition!r} has none (got basic_share={share})"
        )
    return share, pending
