"""Statistics computed from linear queries on columns the engine derives from one numeric
column: the base of :class:`~approxdp.releases.quantiles.Quantiles`,
:class:`~approxdp.releases.variance.Variance` and :class:`~approxdp.releases.bounds.PrivateBounds`.

Such a statistic is a query spec like any other (it goes into a plan, shares its joint
calibration and its one spend), described in three parts:

1. its **engine work**, a :class:`~approxdp.engines.derivation.Derivation` of its column (a
   quantile tree's bin indices, a variance's centred powers), run by
   :meth:`Engine.derive <approxdp.engines.base.Engine.derive>` — rows without a value dropped;
2. its **parts**, linear queries (histograms, sums) on the derived columns, whose sensitivities
   the plan derives like any other query's (:mod:`approxdp.releases.sensitivity`): they are
   allocated, aggregated, checked and noised with the rest of the plan
   (:func:`~approxdp.releases.execute.execute`);
3. its **post-processing**, :meth:`DerivedQuery.finish`, from the parts' noisy results to the
   statistic's own result (no data, no budget).
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from approxdp.engines.derivation import Derivation
from approxdp.engines.shapes import ColumnKind
from approxdp.errors import DataError, ParameterTypeError
from approxdp.releases.result import ReleaseResult
from approxdp.releases.specs import Measure, Query

if TYPE_CHECKING:
    from approxdp.releases.noise import PreparedNoise

__all__ = ["DerivedQuery", "check_numeric_column", "fresh_names"]


@dataclass(frozen=True, slots=True)
class DerivedQuery(Query):
    """A statistic of the numeric ``column`` computed from linear parts on derived columns
    (module docstring). Subclasses define :meth:`derivation`, :meth:`parts` and
    :meth:`finish`."""

    column: str

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise ParameterTypeError(f"column must be a column name, got {self.column!r}")

    def label(self) -> str:
        """The name shown in reports: ``kind(column)`` unless named."""
        return self.name or f"{self.kind}({self.column})"

    def measures(self) -> tuple[Measure, ...]:
        """A derived statistic has no measures of its own: its parts have."""
        raise ParameterTypeError(
            f"{self.label()} is computed from its parts(); it has no measures of its own"
        )

    def derivation(self, taken: Collection[str] = ()) -> Derivation:
        """The columns the engine derives from :attr:`column`, named unlike any of ``taken``
        (the table's columns; compared without case)."""
        raise NotImplementedError

    def parts(self, derivation: Derivation | None = None) -> tuple[Query, ...]:
        """The linear queries on the columns of ``derivation`` (default: :meth:`derivation`
        of no columns) that this statistic is computed from."""
        raise NotImplementedError

    def part_level(self, level: float) -> float:
        """The confidence level of the parts' intervals when the statistic's is ``level``."""
        return level

    def check_before_spend(self, true: Sequence[npt.NDArray[np.float64]],
                           noises: Sequence[PreparedNoise]) -> None:
        """Refuse, before the spend, a release whose result would carry no information, from
        its parts' exact values ``true`` and the noise each will get (an exact check, for the
        data holder: raise :class:`~approxdp.errors.InsufficientDataError`). None by default."""

    def finish(self, parts: Sequence[ReleaseResult], level: float) -> ReleaseResult:
        """The statistic's result from its parts' noisy results (post-processing only)."""
        raise NotImplementedError


def fresh_names(taken: Collection[str], stems: Sequence[str]) -> tuple[str, ...]:
    """``stems``, each with ``_`` appended until it differs (without case) from every name of
    ``taken`` and from the others: names for derived columns that cannot clash."""
    used = {c.lower() for c in taken}
    out = []
    for stem in stems:
        name = stem
        while name.lower() in used:
            name += "_"
        used.add(name.lower())
        out.append(name)
    return tuple(out)


def check_numeric_column(schema: Mapping[str, ColumnKind], column: str, name: str) -> None:
    """Raise :class:`DataError` (nothing spent) unless ``column`` is a numeric column of
    ``schema``; ``name`` is the release's label, for the message."""
    if column not in schema:
        close = difflib.get_close_matches(column, list(schema), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise DataError(f"{name}: column {column!r} not found; the table has columns "
                        f"{list(schema)}{hint}; nothing was spent")
    if schema[column] is not ColumnKind.NUMERIC:
        raise DataError(
            f"{name}: column {column!r} must be numeric, but it is {schema[column].value}; "
            f"casts={{{column!r}: 'double'}} turns every value that is not a number into "
            "a missing value; nothing was spent"
        )
