"""What a release knows exactly about the data: for the data holder, never published.

A release reads the data exactly before it adds noise: how many rows it read and used, how many
values of a cast column were not numbers (with examples), how its cells compare with a
threshold. None of that is private. It is kept apart from the released values, in
:class:`Diagnostics` (``ReleaseResult.diagnostics``), labelled :data:`EXACT_LABEL` wherever it
is shown, and left out of every artifact (``ReleaseResult.to_dict()``, the CLI's ``--json`` and
``--output`` files, the browser's downloads) unless the caller asks for it by name
(``to_dict(exact_diagnostics=True)``, ``--exact-diagnostics``). ``docs/security.md`` gives the
threat model this follows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from approxdp.errors import EXACT_LABEL

__all__ = ["EXACT_LABEL", "Diagnostics"]


@dataclass(frozen=True)
class Diagnostics:
    """Exact facts about the data one release read (NOT private: for the data holder only).

    Attributes:
        rows: Rows read, rows' worth used after contribution bounding and domain filtering,
            rows dropped (``{"read", "used", "dropped"}``; empty where not counted).
        casts: For each column converted with ``casts=``: how many values were not numbers
            and became missing, with up to three of them.
        notes: Other exact observations (e.g. how the cells compare with the selection
            threshold).
    """

    rows: Mapping[str, int] = field(default_factory=dict)
    casts: Mapping[str, tuple[int, tuple[str, ...]]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    label = EXACT_LABEL

    def with_casts(self, casts: Mapping[str, tuple[int, tuple[str, ...]]]) -> Diagnostics:
        """These diagnostics with the cast report of the table (columns with a value that was
        not a number)."""
        kept = {c: (n, tuple(ex)) for c, (n, ex) in casts.items() if n}
        return Diagnostics(dict(self.rows), {**self.casts, **kept}, self.notes)

    def with_notes(self, *notes: str) -> Diagnostics:
        """These diagnostics with more exact observations."""
        return Diagnostics(dict(self.rows), dict(self.casts), (*self.notes, *notes))

    def lines(self) -> list[str]:
        """One line per fact, for a report shown to the data holder."""
        out = []
        if self.rows:
            out.append("rows: " + ", ".join(f"{k} = {v}" for k, v in self.rows.items()))
        out += [f"cast of {column!r}: {n} value(s) were not numbers (e.g. {list(examples)}) "
                "and count as missing" for column, (n, examples) in self.casts.items()]
        out += list(self.notes)
        return out

    def to_dict(self) -> dict[str, Any]:
        """As a JSON object: ``{label, rows, casts{column: {count, examples}}, notes}``."""
        return {
            "label": EXACT_LABEL,
            "rows": dict(self.rows),
            "casts": {c: {"count": n, "examples": list(ex)} for c, (n, ex) in self.casts.items()},
            "notes": list(self.notes),
        }
