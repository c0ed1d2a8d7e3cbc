"""Opening a :class:`~approxdp.accounting.PrivacyAccountant`'s ledger: the settings stored in
an existing ledger file, and the ledger itself — in memory, or the SQLite file — with the
ledgers of its sub-budgets (:mod:`~approxdp.accounting.budget.sub_budgets`).

A new ledger file with sub-budgets is checked before anything is written: the split must fit
the ``"gdp"`` filter's block declared at creation (certified PLD,
:func:`~approxdp.accounting.budget.filter.new_filter`); the file then records it
(:class:`~approxdp.accounting.budget.sqlite_files.SubLedgerRecord`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from approxdp.accounting.budget.filter import FilterKind, new_filter
from approxdp.accounting.budget.ledger import MemoryLedger
from approxdp.accounting.budget.sub_budgets import open_sub_files, sub_ledgers, sub_records
from approxdp.accounting.composition.filter_state import RdpShare
from approxdp.errors import LedgerError, ParameterTypeError

if TYPE_CHECKING:
    from approxdp.accounting.budget.sqlite_files import LedgerSettings
    from approxdp.accounting.budget.sqlite_ledger import SQLiteLedger

__all__ = ["file_ledger", "memory_ledger", "stored_settings"]


class SubAccountant(Protocol):
    """What opening needs of a sub-budget's accountant."""

    @property
    def budget(self) -> tuple[float, float]: ...

    @property
    def ledger_id(self) -> str | None: ...

    def close(self) -> None: ...


S = TypeVar("S", bound=SubAccountant)


def stored_settings(ledger: str | os.PathLike[str] | None) -> LedgerSettings | None:
    """The settings stored in the ledger file ``ledger`` (None: an in-memory ledger, or no
    non-empty file yet — or one another process is creating right now).

    Raises:
        ParameterTypeError: ``ledger`` is neither None nor a file path.
        LedgerError: the file is not a readable approxdp ledger.
    """
    settings = None
    if ledger is not None and not isinstance(ledger, str | os.PathLike):
        raise ParameterTypeError(
            f"ledger must be None or a file path, got {type(ledger).__name__} {ledger!r}"
        )
    if ledger is not None and os.path.isfile(ledger) and os.path.getsize(ledger) > 0:
        from approxdp.accounting.budget.sqlite_files import being_created
        from approxdp.accounting.budget.sqlite_ledger import read_ledger_settings

        try:
            settings = read_ledger_settings(ledger)
        except LedgerError:
            # another process is creating it now: open it as new (the file's own
            # creation transaction decides, and its stored settings are then checked)
            if not being_created(ledger):
                # ... or it was, and its creation committed between the two reads (seen
                # under load: four processes creating one file, one refused it as "not an
                # approxdp ledger (application_id=0)"): read it again, as it is now
                try:
                    settings = read_ledger_settings(ledger)
                except LedgerError:
                    if not being_created(ledger):
                        raise
    return settings


def memory_ledger(
    sub_budgets: Mapping[str, Any] | None, composition: str, budget: tuple[float, float],
    filter_kind: FilterKind | None, share: tuple[float, float] | None, pending: Any,
    rdp: RdpShare | None, make: Callable[..., S],
) -> tuple[MemoryLedger, dict[str, S]]:
    """An in-memory ledger and its sub-budgets' (``make(**kwargs)`` each), by name; under a
    filter its state starts with the block declared at creation (the sub-budgets in it)."""
    subs_by_name = sub_ledgers(sub_budgets, composition, budget, make)
    subs = tuple((name, Fraction(a.budget[0]), Fraction(a.budget[1]))
                 for name, a in subs_by_name.items())
    start = None
    if filter_kind is not None:
        start = new_filter(filter_kind, budget, share,
                           pending=pending, rdp=rdp, subs=subs)
    return MemoryLedger(start), subs_by_name


def file_ledger(
    ledger: str | os.PathLike[str], settings: LedgerSettings | None,
    sub_budgets: Mapping[str, Any] | None, composition: str, adaptivity: str,
    budget: tuple[float, float], share: tuple[float, float] | None, rdp: RdpShare | None,
    read_only: bool, make: Callable[..., S],
) -> tuple[SQLiteLedger, dict[str, S]]:
    """The ledger file ``ledger`` (created if absent) and its sub-budgets' files
    (:func:`~approxdp.accounting.budget.sub_budgets.open_sub_files`), by name; the file is
    closed again if they cannot be opened."""
    from approxdp.accounting.budget.sqlite_ledger import SQLiteLedger

    records = sub_records(sub_budgets, ledger, composition, budget)
    if records and settings is None:  # a new file: the split must fit before it is written
        new_filter("gdp", budget, share, rdp=rdp, subs=tuple(
            (r.name, Fraction(r.budget[0]), Fraction(r.budget[1])) for r in records))
    file = SQLiteLedger(
        ledger, budget=budget, composition=composition,
        adaptivity=adaptivity, basic_share=share, read_only=read_only,
        rdp=rdp, subs=records,
    )
    try:
        subs = open_sub_files(file, read_only, make)
    except BaseException:
        file.close()
        raise
    return file, subs
