"""The data checks every engine runs the same way before a primitive touches the data: columns
that exist (with the closest name when one is misspelled), are not reserved, have the kind an
aggregation needs, and values that can be compared with their column."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

import numpy as np

from approxdp.engines.base import RESERVED_PREFIX
from approxdp.engines.shapes import AggregateRequest, ColumnKind, Membership
from approxdp.errors import DataError, ParameterTypeError

__all__ = [
    "LITERAL_TYPES",
    "check_column",
    "check_columns",
    "check_condition_column",
    "check_new_columns",
    "check_values",
]

def check_columns(schema: Mapping[str, ColumnKind], request: AggregateRequest) -> None:
    """Raise :class:`DataError` naming any column the request uses that the table lacks, whose
    name is reserved (:data:`RESERVED_PREFIX`, or a group column named like one of the
    request's aggregations: an engine would bind the wrong column or return two of one name),
    or whose values or kind do not fit the request."""
    used: list[tuple[str, str]] = [(c, "by") for c in request.by]
    used += [(m.column, "keep") for m in request.keep]
    if request.sample is not None:
        used.append((request.sample.key, "privacy_unit"))
    for agg in request.aggregations:
        if agg.column is not None:
            used.append((agg.column, f"aggregation {agg.name!r}"))
        used += [(m.column, f"aggregation {agg.name!r} where") for m in agg.where]
    for column, role in used:
        if column not in schema:
            close = difflib.get_close_matches(column, list(schema), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise DataError(
                f"column {column!r} ({role}) not found; the table has columns "
                f"{list(schema)}{hint}"
            )
    for column, role in used:
        if column.startswith(RESERVED_PREFIX):
            raise DataError(
                f"column {column!r} ({role}): names beginning with {RESERVED_PREFIX!r} are "
                "reserved for the engines' own columns; rename it (e.g. in a view)"
            )
    names = {a.name.lower() for a in request.aggregations}
    for column in request.by:
        if column.lower() in names:
            raise DataError(
                f"group column {column!r} has the name of one of the request's aggregations "
                f"{sorted(names)}; rename it"
            )
    for cond in request.keep:
        check_values(schema, cond, "domain")
    for agg in request.aggregations:
        for cond in agg.where:
            check_values(schema, cond, f"aggregation {agg.name!r} where")
    for agg in request.aggregations:
        if agg.column is not None and schema[agg.column] is not ColumnKind.NUMERIC:
            raise DataError(
                f"column {agg.column!r} must be numeric for aggregation {agg.name!r}, but it is "
                f"{schema[agg.column].value}"
            )


def check_column(schema: Mapping[str, ColumnKind], column: str) -> ColumnKind:
    """The kind of ``column``, or :class:`DataError` naming the table's columns (and the
    closest name) when it has none such (the same check on every engine)."""
    if column not in schema:
        close = difflib.get_close_matches(column, list(schema), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise DataError(f"column {column!r} not found; the table has columns {list(schema)}"
                        f"{hint}")
    return schema[column]


def check_condition_column(schema: Mapping[str, ColumnKind], condition: Membership) -> None:
    """Raise :class:`DataError` if ``condition`` names a column the table lacks or lists values
    that cannot be compared with it (``count_outside``'s checks, the same on every engine)."""
    check_column(schema, condition.column)
    check_values(schema, condition, "domain")


def check_new_columns(schema: Mapping[str, ColumnKind], column: str, new: Sequence[str]) -> None:
    """Raise :class:`DataError` if ``column`` (read by a derived-column primitive such as
    :meth:`Engine.derive`) is missing or one of the ``new`` columns already exists."""
    check_column(schema, column)
    clash = [n for n in new if n in schema]
    if clash:
        raise DataError(f"derived column {clash[0]!r} already exists in the table")


_VALUE_TYPES: dict[ColumnKind, tuple[type, ...]] = {
    ColumnKind.NUMERIC: (int, float, np.integer, np.floating),
    ColumnKind.STRING: (str,),
    ColumnKind.BOOLEAN: (bool, np.bool_),
}


#: The types of the values every engine can write as a literal: what a key column's value must
#: be to equal a value of a condition or a declared domain (a date or a list never does).
LITERAL_TYPES = (str, int, float, bool, np.integer, np.floating, np.bool_)


def check_values(schema: Mapping[str, ColumnKind], cond: Membership, role: str) -> None:
    """Raise :class:`DataError` if a value of ``cond`` cannot be compared with its column
    (a string for a numeric column, a number for a string column...; ``None`` always fits),
    :class:`ParameterTypeError` if it is no literal at all (a date, a list...)."""
    kind = schema[cond.column]
    for v in cond.values:  # what every engine can write as a literal (dates and such cannot)
        if v is not None and not isinstance(v, LITERAL_TYPES):
            raise ParameterTypeError(
                f"{role} values must be str, int, float, bool or None, got "
                f"{type(v).__name__} {v!r} for column {cond.column!r}"
            )
    types = _VALUE_TYPES.get(kind)
    if types is None:
        return
    for v in cond.values:
        bad_bool = kind is ColumnKind.NUMERIC and isinstance(v, bool | np.bool_)
        if v is not None and (bad_bool or not isinstance(v, types)):
            raise DataError(
                f"{role} value {v!r} ({type(v).__name__}) does not fit column "
                f"{cond.column!r}, which is {kind.value}"
            )
