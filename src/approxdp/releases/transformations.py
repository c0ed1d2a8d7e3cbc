"""Filters, derived columns and public joins: new tables that share their parent's accountant.

``t.filter("age > 30 AND sex = 'Female'")``, ``t.with_column("revenue", "price * quantity",
bounds=(0, 1000))`` and ``t.join_public(regions, on="zip")`` each return a new
:class:`~approxdp.releases.PrivateTable` over the transformed rows, with the same accountant,
privacy unit, contribution caps, neighbouring relation and noise source: every release kind
works on it, and pays from the one budget. Expressions are SQL over one row's columns, parsed
and checked by :mod:`approxdp.engines.expressions` (an allow-list; never pasted into SQL).

Why a filter or a derived column costs no privacy. Each is a *per-record* transformation: a
row's output depends on that row alone (and on public constants), so adding or removing one
person changes the transformed table by at most that person's own (transformed) rows — the
transformation is 1-stable, and a release that is (ε, δ)-DP on the transformed table is
(ε, δ)-DP on the original (McSherry 2009, Theorem 2 with c = 1,
https://doi.org/10.1145/1559845.1559850; the argument is the same for (ε, δ), since a
1-stable map sends neighbours to neighbours or to the same table. Tumult Analytics treats
filters, maps and public joins alike: Berghel et al. 2022, https://arxiv.org/abs/2212.04133).
That is why the expression language refuses subqueries, aggregates and windows: they would
make one row's fate depend on others.

Contribution bounding still holds: the transformations run first and the per-unit bounding
(``privacy_unit``, ``max_partitions``, ``max_rows_per_partition``) runs on the transformed
rows inside each release, so a filter never widens what a unit contributes and the
sensitivity analysis (:mod:`~approxdp.releases.sensitivity`) is unchanged — with one
refinement: after a filter a unit may have no row left, so a global count's per-unit range is
[0, m], not [1, m] (:attr:`ContributionBounds.filtered
<approxdp.releases.specs.ContributionBounds>`). Under add/remove that changes nothing; under
replace-one it makes a filtered count noisy (Δ = m instead of m − 1: a person swapped for
another can leave or enter the filter).

Derived columns: their sensitivity comes from the bounds stated for them, never from the
data: ``with_column(..., bounds=(low, high))`` declares them, and sums, means, quantiles and
variances of the column then clamp to them as for any column (an explicit ``bounds=`` at the
release wins).

Public joins (:meth:`TableTransformations.join_public`). The public table must not depend on
anyone's private data (a list of regions, a price list). With each private row matching at
most one public row (a many-to-one lookup: checked, on the public table), the join is a
per-record map — stable as above; an inner join also drops unmatched rows, a filter. A key
that matches several public rows would copy a private row several times and multiply its
contribution: that is refused when each row is its own unit (``privacy_unit=None``), and
allowed with a privacy unit, where the per-unit caps bound what the unit contributes after
the join (the copies count against its ``max_rows_per_partition`` and ``max_partitions``). A
join of two private tables is refused (:class:`~approxdp.errors.PrivateJoinError`): its
stability depends on how many rows of the other table each person's rows meet, which needs a
per-key truncation of both sides that approxdp does not implement.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal, Self, overload

from approxdp.engines import Engine
from approxdp.engines.expressions import ValueType, parse_expression
from approxdp.engines.transforms import JoinHow
from approxdp.errors import DataError, ParameterTypeError, PrivateJoinError
from approxdp.releases.specs import ContributionBounds, check_bounds

__all__ = ["TableTransformations"]

Bounds = tuple[float, float]


class TableTransformations:
    """The transformations of :class:`~approxdp.releases.PrivateTable` (see the module
    docstring): each returns a new table sharing this one's accountant and settings."""

    engine: Engine[Any]
    table: Any
    bounds: ContributionBounds
    #: Bounds declared by :meth:`with_column` for derived columns.
    _declared: Mapping[str, Bounds] = MappingProxyType({})
    #: The transformations that made this table, as written (public parameters).
    _steps: tuple[str, ...] = ()

    @property
    def columns(self) -> dict[str, ValueType]:
        """The table's columns, in order, with their type in the expression language
        (integer, float, string, boolean, other): public metadata, no data read."""
        return dict(self.engine.column_types(self.table))

    @property
    def steps(self) -> tuple[str, ...]:
        """The filters, derived columns and joins that made this table, in order."""
        return self._steps

    def filter(self, predicate: str) -> Self:
        """The rows where ``predicate`` is true (false and NULL rows are dropped).

        ``predicate`` is an SQL condition over the columns, e.g. ``"age > 30 AND sex =
        'Female'"`` (:mod:`approxdp.engines.expressions`: the allowed language). Free of
        privacy cost (a per-record transformation; module docstring); nothing is read now.

        Raises:
            ExpressionError: The predicate is not in the language (a subquery, a file reader,
                an unknown column or function, ``;``...) or is not true/false per row.
        """
        expr = parse_expression(predicate, self.engine.column_types(self.table),
                                role="predicate", what="filter")
        table = self.engine.filter_rows(self.table, expr)
        return self._derive(table, f"filter({predicate!r})", filtered=True)

    def with_column(self, name: str, expression: str, *, bounds: Bounds | None = None) -> Self:
        """A new column ``name`` computed from each row by ``expression`` (SQL, e.g.
        ``"price * quantity"`` or ``"CASE WHEN age < 30 THEN 'young' ELSE 'older' END"``).

        Args:
            name: A name no column has (existing columns are never replaced).
            expression: The SQL expression (:mod:`approxdp.engines.expressions`).
            bounds: (low, high) for a numeric column: the clamping bounds its sums, means,
                quantiles and variances use when none are given at the release (stated by
                you, never read from the data).

        Raises:
            ExpressionError: The expression is not in the language.
            DataError: ``name`` exists already.
            InvalidParameterError: ``bounds`` are not finite with low <= high, or given for a
                column that is not numeric.
        """
        types = self.engine.column_types(self.table)
        expr = parse_expression(expression, types, role="value", what=f"with_column({name!r})")
        declared = dict(self._declared)
        step = f"with_column({name!r}, {expression!r}"
        if bounds is not None:
            low, high = check_bounds("bounds", bounds)
            if expr.value_type not in ("integer", "float"):
                raise ParameterTypeError(
                    f"with_column({name!r}): bounds apply to numbers, but the expression is a "
                    f"{expr.value_type}"
                )
            declared[name] = (low, high)
            step += f", bounds=({low:g}, {high:g})"
        table = self.engine.with_expression(self.table, name, expr)
        return self._derive(table, step + ")", declared=declared)

    def join_public(
        self, table: object, on: str | Sequence[str] | Mapping[str, str], *,
        how: JoinHow = "inner",
    ) -> Self:
        """Join a public lookup table on key columns, before aggregating.

        Args:
            table: The public data (a path, pandas/Polars DataFrame, Arrow table, or a Spark
                DataFrame on the Spark engine): it must not depend on anyone's private data.
            on: The key column(s), named alike on both sides, or ``{private: public}``.
            how: ``"inner"`` (default: private rows with no match are dropped) or ``"left"``
                (kept, with NULL in the public columns).

        Each private row should match at most one public row. Public keys that repeat are
        refused without a ``privacy_unit`` (a row copied k times would count k times), and
        allowed with one, where the per-unit caps bound the copies (module docstring).

        Raises:
            PrivateJoinError: ``table`` is a PrivateTable (two private tables cannot be
                joined: module docstring).
            DataError: A key is missing or of another type on one side, a public column has
                the name of a private one, or public keys repeat without a privacy unit.
        """
        if isinstance(table, TableTransformations):
            raise PrivateJoinError(
                "join_public joins a PUBLIC table; this one is a PrivateTable. Joining two "
                "private tables is not supported: each person's rows could meet any number of "
                "the other table's rows, so the join's sensitivity is unbounded without a "
                "per-key truncation of both sides. Release from each table separately (their "
                "releases share the budget when they share an accountant), or join the data "
                "before wrapping it in one PrivateTable with the privacy unit of the result"
            )
        pairs = _join_pairs(on)
        lookup = self.engine.load(table)
        n_dup, examples = self.engine.duplicate_keys(lookup, [b for _, b in pairs])
        step = f"join_public(on={_show_on(pairs)}, how={how!r})"
        if n_dup and self.bounds.privacy_unit is None:
            raise DataError(
                f"join_public: {n_dup} key value(s) occur on several rows of the public table "
                f"(e.g. {[e[0] if len(e) == 1 else e for e in examples]}), so a private row "
                "could be copied several times and count several times. Make the public keys "
                "unique, or declare privacy_unit= (the column identifying whom to protect): "
                "the per-unit caps then bound each unit's rows after the join"
            )
        if n_dup:
            step += (f" [{n_dup} public key(s) repeat: rows may be copied; each unit's copies "
                     "count against its caps]")
        joined = self.engine.join_lookup(self.table, lookup, pairs, how)
        return self._derive(joined, step, filtered=how == "inner")

    # -- shared ----------------------------------------------------------------------------
    def _derive(
        self, table: Any, step: str, *, filtered: bool = False,
        declared: Mapping[str, Bounds] | None = None,
    ) -> Self:
        """A copy of this table over ``table``: the same accountant, engine, settings and
        noise source; ``filtered`` marks that rows may have been dropped."""
        child = copy.copy(self)
        child.table = table
        if filtered and not self.bounds.filtered:
            child.bounds = dataclasses.replace(self.bounds, filtered=True)
        child._steps = (*self._steps, step)
        if declared is not None:
            child._declared = MappingProxyType(dict(declared))
        return child

    @overload
    def _bounds_for(self, column: str, bounds: Bounds | None, what: str) -> Bounds: ...

    @overload
    def _bounds_for(
        self, column: str, bounds: Bounds | Literal["private"] | None, what: str
    ) -> Bounds | Literal["private"]: ...

    def _bounds_for(
        self, column: str, bounds: Bounds | Literal["private"] | None, what: str
    ) -> Bounds | Literal["private"]:
        """``bounds`` if given, else the bounds declared for ``column`` by :meth:`with_column`
        (clamping bounds are never read from the data)."""
        if bounds is not None:
            return bounds
        declared = self._declared.get(column)
        if declared is None:
            raise ParameterTypeError(
                f"{what}({column!r}) needs bounds=(low, high) (or bounds='private' where "
                "supported): clamping bounds are never read from the data. A derived column "
                "can declare them: with_column(name, expression, bounds=(low, high))"
            )
        return declared

    def _step_notes(self) -> tuple[str, ...]:
        if not self._steps:
            return ()
        return ("table: " + " → ".join(self._steps)
                + " (transformations before bounding; free in privacy)",)


def _join_pairs(on: object) -> list[tuple[str, str]]:
    """``on`` as (private column, public column) pairs."""
    if isinstance(on, str):
        pairs = [(on, on)]
    elif isinstance(on, Mapping):
        pairs = [(a, b) for a, b in on.items()]
    elif isinstance(on, Sequence):
        pairs = [(c, c) for c in on]
    else:
        raise ParameterTypeError(
            f"on must be a column name, a list of them or {{private: public}}, got {on!r}"
        )
    for a, b in pairs:
        if not (isinstance(a, str) and a and isinstance(b, str) and b):
            raise ParameterTypeError(f"on must name columns, got {on!r}")
    return pairs


def _show_on(pairs: list[tuple[str, str]]) -> str:
    if all(a == b for a, b in pairs):
        return repr(pairs[0][0]) if len(pairs) == 1 else repr([a for a, _ in pairs])
    return repr(dict(pairs))
