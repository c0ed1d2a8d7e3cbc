"""The data checks of a release, all run before anything is spent.

Value columns must exist and be numeric, declared domains must fit their columns' types, the
table must have rows, and with ``outside_domain="error"`` every row must lie inside the
declared domain. These checks read the data exactly, so their errors are not private: they
are for the data holder, who runs the release, and say so — a
:class:`~approxdp.errors.DataCheckError` ends its message with "(exact, not private — for the
data holder)" and carries an ``advice`` without any value from the data, which is what a page
shown to others (the browser) prints instead. Nothing is spent when a check fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from approxdp.engines.base import Engine, TableT
from approxdp.engines.checks import LITERAL_TYPES, check_columns, check_values
from approxdp.engines.shapes import AggregateRequest, AggregateResult, ColumnKind, Membership
from approxdp.errors import DataCheckError, DataError
from approxdp.releases._aggregation import canonical_key
from approxdp.releases.plan import AllocatedQuery

__all__ = [
    "DROPPED_NOTE",
    "EMPTY_ADVICE",
    "EMPTY_TABLE",
    "check_domain_in_result",
    "check_measure_columns",
    "check_outside_domain",
    "check_request_columns",
    "empty_table",
]

EMPTY_TABLE = "the table is empty (0 rows); nothing to release and nothing was spent"
#: What to change when a table has no rows (what a page shows, with no count in it).
EMPTY_ADVICE = "the table has no rows to release: check the file and the filters"


def empty_table() -> DataCheckError:
    """The error of a table with no rows (exact: the count is 0)."""
    return DataCheckError(EMPTY_TABLE, advice=EMPTY_ADVICE)

#: The note of a release that dropped the rows outside its declared domain.
DROPPED_NOTE = "rows outside the declared domain were dropped (not counted anywhere)"


def check_measure_columns(
    engine: Engine[TableT],
    table: TableT,
    schema: Mapping[str, ColumnKind],
    queries: Sequence[AllocatedQuery],
) -> None:
    """Raise :class:`DataError` (nothing spent) for a value column that is not numeric, naming
    the query, the column, how many values are not numbers with examples, and the way out (a
    cast that makes them missing values). A table with no rows says that instead: a header-only
    CSV has only text columns. (The engines' own check names internal aggregation names.)"""
    for aq in queries:
        for meas in aq.query.measures():
            col = meas.column
            if col is None or col not in schema or schema[col] is ColumnKind.NUMERIC:
                continue
            if engine.count_rows(table) == 0:
                raise empty_table()
            label = aq.query.label()
            cast = (f"casts={{{col!r}: 'double'}} turns every value that is not a number into "
                    "a missing value (and reports how many)")
            if schema[col] is ColumnKind.STRING:
                n_bad, examples = engine.count_unconvertible(table, col)
                advice = (f"{label}: column {col!r} must be numeric but holds text: clean it, "
                          f"or {cast}")
                if n_bad:
                    raise DataCheckError(
                        f"{label}: column {col!r} must be numeric, but it holds text: {n_bad} "
                        f"value(s) are not numbers, e.g. {list(examples)}; clean them, or "
                        f"{cast}; nothing was spent", advice=advice,
                    )
                raise DataCheckError(
                    f"{label}: column {col!r} holds numbers stored as text; {cast}; nothing "
                    "was spent", advice=advice,
                )
            raise DataError(
                f"{label}: column {col!r} must be numeric, but it is {schema[col].value}; "
                f"convert it first, or {cast}; nothing was spent"
            )


def check_request_columns(
    schema: Mapping[str, ColumnKind],
    requests: Sequence[AggregateRequest],
    queries: Sequence[AllocatedQuery],
) -> None:
    """Raise :class:`DataError` for a column the requests name that the table lacks (with the
    closest names), or a declared domain whose values cannot match their column's type. Every
    domain is checked, also where no filter of the requests carries it (checked in Python)."""
    for req in requests:
        check_columns(schema, req)
    for aq in queries:
        for col, vals in aq.query.cell_domain or ():
            check_values(schema, Membership(col, vals), "domain")


def _outside_domain(
    n_out: int, column: str, examples: list[Any], hint: str | None = None
) -> DataCheckError:
    """The error for ``n_out`` rows whose ``column`` is outside its declared domain; its
    advice names no count and no value."""
    advice = hint or f"add the missing values to domain[{column!r}] or pass outside_domain='drop'"
    return DataCheckError(
        f"{n_out} row(s) have column {column!r} outside the declared domain (e.g. {examples}); "
        f"{advice}; nothing was spent",
        advice=f"rows of column {column!r} lie outside the declared domain: {advice}",
    )


def check_outside_domain(
    engine: Engine[TableT], table: TableT, queries: Sequence[AllocatedQuery]
) -> None:
    """Raise :class:`DataError` if a row of ``table`` lies outside the declared domain of one
    of ``queries``, counted by the engine (one scan per distinct column and domain)."""
    checked: set[Membership] = set()
    for aq in queries:
        for col, vals in aq.query.cell_domain or ():
            cond = Membership(col, vals)
            if cond in checked:
                continue  # queries over the same domain: one scan
            checked.add(cond)
            n_out, examples = engine.count_outside(table, cond)
            if n_out:
                raise _outside_domain(n_out, col, list(examples))


def check_domain_in_result(
    aq: AllocatedQuery, agg: AggregateResult, *, filtered: bool = False
) -> AggregateResult:
    """Raise if any group lies outside the declared domain; else return ``agg`` unchanged.

    Used when the aggregation ran without the domain filter (no per-unit limits): with every
    row inside the domain the filter is a no-op, so one scan serves both the check and the
    release. ``filtered``: the engine already kept only rows in the domain (or checked them),
    so a group that is not a domain value is one the engine matched in SQL that Python does
    not (a date column against string values): found before anything is spent.
    """
    dom = aq.query.cell_domain
    if not dom:
        return agg
    for col, vals in dom:
        allowed = {canonical_key(v) for v in vals}
        keys = agg.keys[col]
        bad = [j for j, v in enumerate(keys) if canonical_key(v) not in allowed]
        if bad and filtered:
            value = keys[bad[0]]
            raise DataCheckError(
                f"column {col!r} holds {type(value).__name__} values such as {value!r}, which "
                f"the engine matched to domain[{col!r}] = {list(vals)[:3]}... but which are not "
                "equal to any of them; cast the column to a string or number type first",
                advice=f"column {col!r} holds values of another type than its domain: cast "
                       "the column to a string or number type first",
            )
        if bad:
            n_out = int(agg.group_rows[bad].sum())
            examples = sorted({keys[j] for j in bad}, key=repr)[:3]
            odd = next((keys[j] for j in bad
                        if keys[j] is not None and not isinstance(keys[j], LITERAL_TYPES)), None)
            hint = None if odd is None else (
                f"its values are {type(odd).__name__}, which never equal a domain's "
                "str/int/float/bool values: cast the column to a string or number type first"
            )
            raise _outside_domain(n_out, col, examples, hint)
    return agg
