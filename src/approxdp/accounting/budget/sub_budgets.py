"""Sub-budgets: ledgers of their own, fixed when a
:class:`~approxdp.accounting.PrivacyAccountant` is created (``sub_budgets=``).

**Why they compose once.** Each sub-budget is a valid privacy filter on its (ε_i, δ_i), so an
(ε_i, δ_i)-DP interactive mechanism whatever its analyst does. Run concurrently with the main
ledger — spends interleaved in any order, each chosen after any earlier output of any of
them — they compose as non-interactive mechanisms with the same curves would (concurrent
composition of f-DP interactive mechanisms: Vadhan & Zhang 2023, arXiv:2207.08335;
filters as the interactive mechanisms: Haney et al. 2023, arXiv:2309.05901). So each enters
the main ledger's block declared at creation as an (ε_i, δ_i) event, checked once by
certified PLD (:func:`~approxdp.accounting.budget.filter.new_filter`), and the main ledger's
own block is fixed then (a sub-budget may draw noise before its first spend).

**On a ledger file** each sub-budget is a ledger file of its own, in the parent's folder
(``f"{stem}.{name}{suffix}"`` unless the spec's ``"ledger"`` names another file there). The
parent records the split (:class:`~approxdp.accounting.budget.sqlite_files.SubLedgerRecord`:
name, budget, file, options) in its meta table when it is created, in the same transaction as
its filter state, so a reopen checks the same split. The sub files are then created, once,
under the parent's write lock (:func:`open_sub_files`), and their identities recorded with the
mark that they are complete, in one transaction: an interrupted creation leaves files without
spends, which the next opener adopts; once complete, a missing or foreign sub file is a
:class:`~approxdp.errors.LedgerError` naming its path (never an empty file in its place: its
spends would be lost).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from approxdp.accounting.budget.arguments import check_budget
from approxdp.accounting.budget.sqlite_connection import LedgerFile
from approxdp.accounting.budget.sqlite_files import SubLedgerRecord, claim_sub_file
from approxdp.errors import (
    InvalidParameterError,
    LedgerError,
    ParameterTypeError,
    UnknownMethodError,
)

__all__ = ["SUB_BUDGET_KEYS", "open_sub_files", "sub_ledgers", "sub_named", "sub_records"]


class SubLedger(Protocol):
    """What :func:`open_sub_files` needs of a sub-budget's accountant."""

    @property
    def ledger_id(self) -> str | None: ...

    def close(self) -> None: ...


A = TypeVar("A")
F = TypeVar("F", bound=SubLedger)

#: The keys a sub-budget's mapping may have (``budget`` is required; ``ledger``, the sub's
#: file name, only under a ledger file).
SUB_BUDGET_KEYS = frozenset({"budget", "composition", "basic_share", "rdp_share", "rdp_orders",
                             "sub_budgets"})
_FILE_KEYS = frozenset({"budget", "composition", "basic_share", "rdp_share", "rdp_orders",
                        "ledger"})
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _checked(specs: Any, composition: str, budget: tuple[float, float],
             allowed: frozenset[str], where: str) -> dict[str, dict[str, Any]]:
    """Each sub-budget's keyword arguments (its budget checked within ``budget``), by name."""
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
    out: dict[str, dict[str, Any]] = {}
    for name, spec in specs.items():
        if not isinstance(name, str) or not name:
            raise ParameterTypeError(
                f"sub_budgets names must be non-empty strings, got {name!r}"
            )
        kwargs = dict(spec) if isinstance(spec, Mapping) else {"budget": spec}
        if "budget" not in kwargs or not set(kwargs) <= allowed:
            raise InvalidParameterError(
                f"sub_budgets[{name!r}] must be an (epsilon, delta) pair or a mapping with "
                f"'budget' and any of {sorted(allowed - {'budget'})}{where}, got {spec!r}"
            )
        eps_i, delta_i = check_budget(kwargs["budget"])
        if eps_i > budget[0] or delta_i > budget[1]:
            raise InvalidParameterError(
                f"sub_budgets[{name!r}] = ({eps_i:g}, {delta_i:g}) is not within the "
                f"budget ({budget[0]:g}, {budget[1]:g})"
            )
        kwargs["budget"] = (eps_i, delta_i)
        out[name] = kwargs
    return out


def sub_ledgers(specs: Any, composition: str, budget: tuple[float, float],
                make: Callable[..., A]) -> dict[str, A]:
    """The in-memory sub-budgets' ledgers (checked), by name (empty: none):
    ``make(**kwargs)`` (a :class:`~approxdp.accounting.PrivacyAccountant`) with each one's
    keyword arguments."""
    if specs is None:
        return {}
    checked = _checked(specs, composition, budget, SUB_BUDGET_KEYS,
                       " ('ledger' names a sub-budget's file under a ledger file)")
    return {name: make(**kwargs) for name, kwargs in checked.items()}


def sub_records(specs: Any, ledger: str | os.PathLike[str], composition: str,
                budget: tuple[float, float]) -> tuple[SubLedgerRecord, ...] | None:
    """The sub-budgets asked for under the ledger file ``ledger`` (checked): their records,
    without ``ledger_id`` (None: none asked for; the stored split is then used)."""
    if specs is None:
        return None
    checked = _checked(specs, composition, budget, _FILE_KEYS,
                       " (a sub-budget of a ledger file has no sub-budgets of its own)")
    parent = Path(ledger)
    records = []
    for name, kwargs in checked.items():
        file = kwargs.pop("ledger", None)
        if file is None:
            if not _NAME.fullmatch(name):
                raise InvalidParameterError(
                    f"sub_budgets name {name!r} cannot name a file: under a ledger file use "
                    "letters, digits, '_' and '-' (at most 64), or give the sub-budget's "
                    "file: {'budget': (epsilon, delta), 'ledger': 'file.sqlite'}"
                )
            file = f"{parent.stem}.{name}{parent.suffix or '.sqlite'}"
        elif not isinstance(file, str | os.PathLike) or Path(file).name != str(file) \
                or str(file) in ("", ".", ".."):
            raise InvalidParameterError(
                f"sub_budgets[{name!r}]['ledger'] must be a file name (no folder: the file "
                f"lies in the parent ledger's folder {str(parent.parent)!r}), got {file!r}"
            )
        options = {key: _option(name, key, value) for key, value in kwargs.items()
                   if key != "budget" and value is not None}
        records.append(SubLedgerRecord(name, kwargs["budget"], str(file), None, options))
    files = [r.file for r in records]
    if len(set(files)) != len(files) or parent.name in files:
        raise InvalidParameterError(
            f"sub_budgets must name distinct files, none the parent's ({parent.name!r}); got "
            f"{files}"
        )
    return tuple(records)


def _option(name: str, key: str, value: Any) -> Any:
    """A sub-budget's option, JSON-shaped (as the parent records it)."""
    try:
        if key == "composition":
            if not isinstance(value, str):
                raise TypeError(key)
            return value
        if key == "rdp_orders":
            return [float(a) for a in value]
        eps, delta = value
        return [float(eps), float(delta)]
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"sub_budgets[{name!r}][{key!r}] must be "
            + ("a rule name" if key == "composition" else "a list of orders > 1"
               if key == "rdp_orders" else "an (epsilon, delta) pair")
            + f", got {value!r}"
        ) from None


def open_sub_files(parent: LedgerFile, read_only: bool, make: Callable[..., F]) -> dict[str, F]:
    """The sub-budgets' ledgers of the ledger file ``parent``, by name: ``make(budget=...,
    ledger=path, read_only=..., **options)`` on each one's file. The first opener creates
    them under ``parent``'s write lock and records their identities
    (:meth:`~approxdp.accounting.budget.sqlite_connection.LedgerFile.complete_sub_files`);
    later ones check each file is there and is the one recorded.

    Raises:
        LedgerError: a sub file is missing, or is another ledger than the one recorded, or
            (read-only) the sub files were never completed.
    """
    if not parent.sub_records:
        return {}
    opened: dict[str, F] = {}

    def open_one(r: SubLedgerRecord, recorded: bool) -> F:
        path = r.path(parent.path)
        where = f"sub-budget {r.name!r} of ledger {str(parent.path)!r}"
        if recorded and not (path.is_file() and path.stat().st_size > 0):
            raise LedgerError(
                f"{where}: its file {str(path)!r} is missing (moved, renamed or deleted?); "
                f"the parent records it as ledger {r.ledger_id}: put that file back at this "
                "path (a new one would lose its spends)"
            )
        acc = make(budget=r.budget, ledger=path, read_only=read_only, **r.options)
        if r.ledger_id is not None and acc.ledger_id != r.ledger_id:
            acc.close()
            raise LedgerError(
                f"{where}: {str(path)!r} is ledger {acc.ledger_id}, not the one the parent "
                f"records ({r.ledger_id}): put the sub-budget's own file back at this path"
            )
        return acc

    def create(records: tuple[SubLedgerRecord, ...]) -> tuple[SubLedgerRecord, ...]:
        done = []
        for r in records:
            acc = open_one(r, recorded=False)
            opened[r.name] = acc
            claim_sub_file(r.path(parent.path), parent.ledger_id, r.name)
            done.append(dataclasses.replace(r, ledger_id=acc.ledger_id))
        return tuple(done)

    try:
        if not parent.sub_files_ready:
            if read_only:
                raise LedgerError(
                    f"the sub-budget files of ledger {str(parent.path)!r} were never completed "
                    "(its creation was interrupted): open it once for writing"
                )
            parent.complete_sub_files(create)
        for r in parent.sub_records:
            if r.name not in opened:
                opened[r.name] = open_one(r, recorded=True)
    except BaseException:
        for acc in opened.values():
            acc.close()
        raise
    return opened


def sub_named(subs: Mapping[str, A], name: str) -> A:
    """The sub-budget ``name``'s ledger in ``subs``.

    Raises:
        UnknownMethodError: no sub-budget of that name.
    """
    try:
        return subs[name]
    except (KeyError, TypeError):
        raise UnknownMethodError(
            f"this ledger has no sub-budget {name!r}; its sub-budgets: "
            f"{sorted(subs)} (set them at creation: sub_budgets={{name: "
            "(epsilon, delta)}})"
        ) from None
