"""The row-expression language of filters and derived columns: parsed, checked against an
allow-list, typed, and written out for each engine.

``PrivateTable.filter("age > 30 AND sex = 'Female'")`` and
``PrivateTable.with_column("revenue", "price * quantity", bounds=(0, 1000))`` take SQL
expressions over one row's columns. Each is parsed by `sqlglot <https://sqlglot.com>`_ (in
DuckDB's dialect: identifiers in double quotes, strings in single quotes) into a tree — never
pasted into a statement — and the tree is checked node by node against the allow-list below:
anything else is an :class:`~approxdp.errors.ExpressionError` naming the offending part. Each
engine then gets SQL *generated from the checked tree* in its own dialect (DuckDB, Spark), with
every identifier quoted and every string literal escaped by the generator.

Allowed:

- column names of the table (unquoted names match case-insensitively when that is unambiguous;
  quoted names exactly), number, string, ``TRUE``/``FALSE`` and ``NULL`` literals;
- arithmetic ``+ - * / %`` and unary ``-``; comparisons ``= <> != < <= > >=``,
  ``IS [NOT] DISTINCT FROM``; ``AND``, ``OR``, ``NOT``; ``IS [NOT] NULL``, ``IS [NOT] TRUE``/
  ``FALSE``; ``[NOT] IN (list)``; ``[NOT] BETWEEN``; ``[NOT] LIKE``/``ILIKE`` with a literal
  pattern (and optional ``ESCAPE``); ``||`` (text concatenation); ``CASE`` (both forms);
- the scalar functions of :data:`FUNCTIONS` and ``CAST``/``TRY_CAST`` to ``DOUBLE``,
  ``BIGINT`` or ``VARCHAR``.

Refused (typed errors): subqueries and ``EXISTS``, aggregates and window functions, table
functions and file readers (``read_csv(...)``), unknown functions, ``*``, parameters, qualified
names (``t.a``), statement separators (``;``), comments, and operands of the wrong type
(``'a' + 1``). The reason is privacy as well as safety: a filter or derived column costs no
privacy only as a *per-record* transformation, each output row a function of one input row and
public constants (McSherry 2009, §2.2/§3, https://doi.org/10.1145/1559845.1559850). A subquery,
aggregate or window would make a row's fate depend on other rows, and a file reader would bring
in other data.

Same results on DuckDB and Spark. The checked tree is normalised so that both engines compute
the same value for every row (``tests/engines/test_conformance.py`` checks each construct):

- arithmetic is float64 (``DOUBLE``): integer operands are converted first, so there is no
  integer overflow or integer division; ``x / 0`` and ``x % 0`` are NULL;
- ``ln(x)`` and ``log10(x)`` are NULL for x ≤ 0 (DuckDB gives −inf/NaN, Spark NULL);
- ``floor``/``ceil`` return float64 (Spark's return BIGINT); ``round(x, d)`` rounds half away
  from zero on the float64 value, as sign(x)·floor(|x|·10^d + 0.5)/10^d (Spark rounds the
  decimal text: ``round(0.285, 2)`` would be 0.29 there, 0.28 in DuckDB);
- every ``CAST`` is a ``TRY_CAST``: a value that does not convert becomes NULL; ``BIGINT``
  truncates toward zero (DuckDB's own cast rounds); a float cannot be cast to text (the
  engines format floats differently: ``1e+20`` against ``1.0E20``);
- ``LIKE`` has no escape character unless ``ESCAPE`` is given (Spark's default ``\\`` is
  turned off), so ``\\`` is an ordinary character on both;
- text is compared byte by byte; ``lower``/``upper`` agree except for Unicode special casings
  (``upper('ß')`` is ``'SS'`` on Spark, ``'ẞ'`` on DuckDB).

Dates and timestamps are not part of the language (a column of another type may only be
tested with ``IS [NOT] NULL``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from approxdp.engines._expression_functions import _Checker
from approxdp.engines._expression_language import (
    _MAX_SQL,
    _NULL,
    CAST_TARGETS,
    FUNCTIONS,
    MAX_EXPRESSION_LENGTH,
    MAX_EXPRESSION_NODES,
    RESERVED_PREFIX,
    Role,
    ValueType,
    _sqlglot,
)
from approxdp.errors import ExpressionError, InternalError, ParameterTypeError

__all__ = [
    "CAST_TARGETS",
    "FUNCTIONS",
    "MAX_EXPRESSION_LENGTH",
    "MAX_EXPRESSION_NODES",
    "RESERVED_PREFIX",
    "Role",
    "RowExpression",
    "ValueType",
    "parse_expression",
]


@dataclass(frozen=True)
class RowExpression:
    """A checked row expression: the text as written, what it is (``role``), its type, the
    columns it reads, and its normalised tree (engines call :meth:`sql`)."""

    text: str
    role: Role
    value_type: ValueType
    columns: tuple[str, ...]
    tree: Any = field(repr=False, compare=False)

    def sql(self, dialect: Literal["duckdb", "spark"]) -> str:
        """The expression as SQL of ``dialect``, generated from the checked tree (every
        identifier quoted, every literal escaped by the generator, no comments)."""
        return str(self.tree.sql(dialect=dialect, identify=True, comments=False))


def parse_expression(
    text: str, types: Mapping[str, ValueType], *, role: Role = "value",
    what: str = "expression",
) -> RowExpression:
    """Parse, check and normalise ``text`` against a table whose columns have ``types``.

    Args:
        text: The SQL expression (DuckDB dialect; see the module docstring for the language).
        types: The table's columns, in order, with their :data:`ValueType`.
        role: ``"predicate"`` (must be true/false per row) or ``"value"``.
        what: How messages name the expression (``"filter"``, ``"with_column('r')"``).

    Raises:
        ExpressionError: Unparsable, outside the allow-list, or ill-typed; the message and
            the error's ``part`` name the offending part.
        ParameterTypeError: ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise ParameterTypeError(
            f"{what} must be a string of SQL, got {type(text).__name__} {text!r}"
        )
    if role not in ("predicate", "value"):
        raise ParameterTypeError(f"role must be 'predicate' or 'value', got {role!r}")

    def fail(reason: str, part: str = "") -> ExpressionError:
        shown = text if len(text) <= 200 else text[:200] + "..."
        return ExpressionError(f"{what} {shown!r}: {reason}", expression=text, part=part)

    if not text.strip():
        raise fail("the expression is empty")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise fail(f"longer than {MAX_EXPRESSION_LENGTH} characters ({len(text)})")
    tree = _parse(text, fail)
    n_nodes = sum(1 for _ in tree.walk())
    if n_nodes > MAX_EXPRESSION_NODES:
        raise fail(f"too large ({n_nodes} parts; at most {MAX_EXPRESSION_NODES})")
    checker = _Checker(dict(types), fail)
    try:
        out, kind = checker.visit(tree)
    except RecursionError:
        raise fail("nested too deeply") from None
    if role == "predicate" and kind not in ("boolean", _NULL):
        raise fail(f"a filter must be true or false for each row, but this is a {kind} value "
                   "(compare it: x > 0, s = 'a', b IS TRUE...)", text)
    if role == "value" and kind == _NULL:
        raise fail("the expression is NULL for every row", text)
    value_type = cast(ValueType, "boolean" if kind == _NULL else kind)
    result = RowExpression(text, role, value_type,
                           tuple(dict.fromkeys(checker.columns)), out)
    for dialect in ("duckdb", "spark"):
        sql = result.sql(dialect)
        if len(sql) > _MAX_SQL:
            raise fail("too large once written out for the engines; simplify it")
        _check_generated(sql, dialect)
    return result


def _check_generated(sql: str, dialect: str) -> None:
    """Defence in depth: the generated SQL must read back as one expression with no comment
    or separator (a generator bug, e.g. ``- -x`` written ``--x``, would fail here)."""
    from sqlglot.dialects.dialect import Dialect

    tokens = Dialect.get_or_raise(dialect).tokenize(sql)
    if any(t.comments or t.token_type.name == "SEMICOLON" for t in tokens):
        raise InternalError(f"generated {dialect} SQL does not read back as one expression "
                            f"without comments: {sql[:200]!r}; please report it")


def _parse(text: str, fail: Callable[..., ExpressionError]) -> Any:
    """Tokenize (refusing ';' and comments), then parse exactly one expression."""
    sqlglot = _sqlglot()
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import ParseError, TokenError

    dialect = Dialect.get_or_raise("duckdb")
    try:
        tokens = dialect.tokenize(text)
    except (TokenError, ValueError) as exc:
        raise fail(f"cannot be read as SQL: {_first_line(exc)}") from None
    for token in tokens:
        if token.token_type.name == "SEMICOLON":
            raise fail("statement separators (';') are not allowed: give one expression", ";")
        if token.comments:
            raise fail(f"comments are not allowed ({token.comments[0].strip()!r})",
                       token.comments[0])
    try:
        trees = sqlglot.parse(text, read="duckdb")
    except (ParseError, TokenError, ValueError) as exc:
        raise fail(f"cannot be read as SQL: {_first_line(exc)}") from None
    except RecursionError:
        raise fail("nested too deeply") from None
    if len(trees) != 1 or trees[0] is None:
        raise fail("give exactly one expression")
    return trees[0]


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
