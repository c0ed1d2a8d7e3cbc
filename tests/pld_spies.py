"""Spies on the PLD accountant's passes, for tests that count them."""

from __future__ import annotations

import pytest

from approxdp.accounting.pld import accounting, refine


def record_solves(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The grid step of every pass ``pld_epsilon`` runs (``accounting._solve``), appended to
    the returned list as each one finishes."""
    calls: list[float] = []
    solve = refine._solve

    def spy(*args: object, **kwargs: object) -> refine._Solved:
        out = solve(*args, **kwargs)  # type: ignore[arg-type]
        calls.append(out.h)
        return out

    monkeypatch.setattr(accounting, "_solve", spy)
    return calls
