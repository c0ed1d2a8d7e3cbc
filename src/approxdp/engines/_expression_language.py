"""The row-expression language's vocabulary (:mod:`approxdp.engines.expressions` documents it):
its value types, limits, functions and cast targets, and the builders of the normalised tree
that the checker returns. Internal: import the public names from
:mod:`approxdp.engines.expressions`."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any, Literal

from approxdp.errors import MissingDependencyError

__all__ = [
    "CAST_TARGETS",
    "FUNCTIONS",
    "MAX_EXPRESSION_LENGTH",
    "MAX_EXPRESSION_NODES",
    "RESERVED_PREFIX",
    "Role",
    "ValueType",
]

#: The value types of the language (an engine maps its column types onto these; ``"other"``:
#: dates, timestamps, lists..., which only ``IS [NOT] NULL`` may test).
ValueType = Literal["integer", "float", "string", "boolean", "other"]
#: ``"predicate"``: a filter (true/false per row); ``"value"``: a derived column.
Role = Literal["predicate", "value"]

#: Longest expression text accepted (characters).
MAX_EXPRESSION_LENGTH = 10_000
#: Most nodes in a parsed expression.
MAX_EXPRESSION_NODES = 1_000
#: Longest generated SQL (normalisation repeats some operands, e.g. round's).
_MAX_SQL = 200_000
#: Column names the engines reserve for their own columns start with this.
RESERVED_PREFIX = "__"

_MAX_FLOAT = 1.7976931348623157e308
#: Most copies of one operand in the normalised tree (nested round/floor/ceil/ln/CAST).
_MAX_COPIES = 512
_NULL = "null"  # the type of a NULL literal: fits any other
_NUMERIC = ("integer", "float")

#: The scalar functions of the language: name → (arguments, what it returns).
FUNCTIONS: dict[str, str] = {
    "abs(x)": "|x| (float64)",
    "sqrt(x)": "√x (NaN for x < 0)",
    "exp(x)": "e^x",
    "ln(x)": "natural log (NULL for x ≤ 0)",
    "log10(x)": "base-10 log (NULL for x ≤ 0)",
    "power(x, y)": "x^y (also pow, x ** y, x ^ y)",
    "floor(x)": "largest whole number ≤ x (float64)",
    "ceil(x)": "smallest whole number ≥ x (float64; also ceiling)",
    "round(x[, d])": "x rounded half away from zero to d decimals (−15 ≤ d ≤ 15 literal)",
    "greatest(a, b, ...)": "largest argument, NULLs skipped",
    "least(a, b, ...)": "smallest argument, NULLs skipped",
    "coalesce(a, b, ...)": "first non-NULL argument",
    "nullif(a, b)": "NULL where a = b, else a",
    "if(c, a, b)": "a where c is true, else b",
    "lower(s)": "lower case",
    "upper(s)": "upper case",
    "length(s)": "number of characters (integer)",
    "trim(s)": "s without leading and trailing spaces",
    "substring(s, start[, n])": "n characters from start (literal ≠ 0; < 0 counts from the "
                                "end; also substr)",
    "replace(s, old, new)": "every old replaced by new",
    "starts_with(s, prefix)": "whether s starts with prefix",
}

#: ``CAST(x AS ...)`` targets: the type names accepted → the language type.
CAST_TARGETS: dict[str, ValueType] = {
    "DOUBLE": "float", "FLOAT": "float", "REAL": "float", "DECIMAL": "float",
    "BIGINT": "integer", "INT": "integer", "INTEGER": "integer", "SMALLINT": "integer",
    "TINYINT": "integer", "VARCHAR": "string", "TEXT": "string", "STRING": "string",
}  # fmt: skip

#: The functions' names, as error messages list them.
_NAMES: list[str] = sorted({sig.split("(")[0] for sig in FUNCTIONS})

_READERS = ("read_", "glob", "scan_", "sniff_", "parquet_", "iceberg", "delta_scan")


def _sqlglot() -> ModuleType:
    try:
        import sqlglot
    except ImportError as exc:  # pragma: no cover - sqlglot is a runtime dependency
        raise MissingDependencyError(
            "filters and derived columns need the 'sqlglot' package: pip install sqlglot"
        ) from exc
    return sqlglot


def _exp() -> Any:
    from sqlglot import exp

    return exp


def _atomic(node: Any) -> bool:
    exp = _exp()
    return isinstance(node, exp.Column | exp.Literal | exp.Boolean | exp.Null | exp.Paren
                      | exp.Func)


def _p(node: Any) -> Any:
    """``node`` in parentheses unless it is atomic (generated operators never rely on
    precedence)."""
    return node if _atomic(node) else _exp().Paren(this=node)


def _double(node: Any) -> Any:
    """``CAST(node AS DOUBLE)`` (float literals are DOUBLE already)."""
    exp = _exp()
    if isinstance(node, exp.Literal) and not node.is_string and _is_float_text(node.this):
        return node
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.Literal):
        return node if _is_float_text(node.this.this) else exp.Cast(
            this=node, to=exp.DataType.build("DOUBLE"))
    return exp.Cast(this=node, to=exp.DataType.build("DOUBLE"))


def _is_float_text(text: str) -> bool:
    return "e" in text.lower()


def _float(value: float) -> Any:
    """A DOUBLE literal on both engines (scientific notation), negative ones in parentheses."""
    text = repr(float(value))
    if "e" not in text:
        text += "e0"
    lit = _exp().Literal.number(text)
    return _exp().Paren(this=lit) if text.startswith("-") else lit


def _integer(value: int) -> Any:
    lit = _exp().Literal.number(str(value))
    return _exp().Paren(this=lit) if value < 0 else lit


def _case(branches: Sequence[tuple[Any, Any]], default: Any = None) -> Any:
    exp = _exp()
    return exp.Case(ifs=[exp.If(this=c, true=v) for c, v in branches], default=default)


def _floor(d: Any) -> Any:
    """floor of the DOUBLE ``d`` as a DOUBLE on both engines (Spark's FLOOR returns BIGINT,
    so it is used only where |d| < 4e18, where it is exact; larger, NaN and ±inf values are
    whole already and pass unchanged)."""
    exp = _exp()
    small = exp.LT(this=exp.Abs(this=d.copy()), expression=_float(4e18))
    return _case([(small, exp.Cast(this=exp.Floor(this=d.copy()),
                                   to=exp.DataType.build("DOUBLE")))], d.copy())


def _ceil(d: Any) -> Any:
    """ceil(d) = −floor(−d)."""
    exp = _exp()
    return exp.Neg(this=_p(_floor(exp.Paren(this=exp.Neg(this=_p(d))))))


def _trunc(d: Any) -> Any:
    """d rounded toward zero, as a DOUBLE."""
    exp = _exp()
    return _case([(exp.LT(this=d.copy(), expression=_float(0.0)), _ceil(d))], _floor(d))
