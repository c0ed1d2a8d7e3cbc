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

import contextlib
import difflib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal, cast

from approxdp.errors import (
    ExpressionError,
    InternalError,
    MissingDependencyError,
    ParameterTypeError,
)

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

_READERS = ("read_", "glob", "scan_", "sniff_", "parquet_", "iceberg", "delta_scan")


def _sqlglot() -> ModuleType:
    try:
        import sqlglot
    except ImportError as exc:  # pragma: no cover - sqlglot is a runtime dependency
        raise MissingDependencyError(
            "filters and derived columns need the 'sqlglot' package: pip install sqlglot"
        ) from exc
    return sqlglot


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


# -- building the normalised tree ---------------------------------------------------------


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


# -- the checker --------------------------------------------------------------------------


class _Checker:
    """Visits a parsed tree: refuses what is not allowed, infers types, returns the
    normalised tree and the columns read."""

    def __init__(self, types: dict[str, ValueType], fail: Callable[..., ExpressionError]):
        self.types = types
        self.fail = fail
        _handlers_ready()
        self.factor = 1  # how many times the node being visited will be written out
        self.columns: list[str] = []
        self._lower: dict[str, list[str]] = {}
        for name in types:
            self._lower.setdefault(name.lower(), []).append(name)

    def part(self, node: Any) -> str:
        try:
            text = str(node.sql("duckdb"))
        except Exception:  # pragma: no cover - sqlglot renders anything it parsed
            text = type(node).__name__
        return text if len(text) <= 80 else text[:80] + "..."

    def refuse(self, node: Any, reason: str) -> ExpressionError:
        part = self.part(node)
        return self.fail(f"{reason} ({part})", part)

    @contextlib.contextmanager
    def copies(self, k: int, node: Any) -> Iterator[None]:
        """Visit an operand that the normalised tree repeats ``k`` times (round, floor, CAST to
        BIGINT... repeat theirs): nested repeats multiply, and past :data:`_MAX_COPIES` the
        expression is refused before anything exponential is built."""
        self.factor *= k
        try:
            if self.factor > _MAX_COPIES:
                raise self.refuse(node, "too large once written out for the engines (nested "
                                        "round/floor/ceil/ln/CAST repeat their operand); "
                                        "simplify it")
            yield
        finally:
            self.factor //= k

    def only(self, node: Any, *keys: str) -> None:
        """Refuse ``node`` if it carries arguments other than ``keys`` (unsupported forms,
        such as ``BETWEEN SYMMETRIC`` or ``TRIM(BOTH 'x' FROM s)``)."""
        extra = [k for k, v in node.args.items() if k not in keys and v not in (None, False, [])]
        if extra:
            raise self.refuse(node, f"this form of {node.key.upper()} is not supported")

    # -- dispatch ---------------------------------------------------------------------------
    def visit(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        if not isinstance(node, exp.Expression):  # an operator missing an operand ('@')
            raise self.fail("incomplete expression: an operator or function lacks an operand")
        if node.comments:
            raise self.refuse(node, "comments are not allowed")
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            return handler(self, node)
        if isinstance(node, exp.Subquery | exp.Query | exp.Exists):
            raise self.refuse(node, "subqueries are not allowed: a row's value may depend on "
                                    "that row only")
        if isinstance(node, exp.Window):
            raise self.refuse(node, "window functions are not allowed: a row's value may "
                                    "depend on that row only")
        if isinstance(node, exp.AggFunc):
            raise self.refuse(node, f"aggregate {node.key}() is not allowed in a row "
                                    "expression: aggregates are released privately (count, "
                                    "sum, mean... methods)")
        if isinstance(node, exp.Star):
            raise self.refuse(node, "'*' is not allowed")
        if isinstance(node, exp.Placeholder | exp.Parameter):
            raise self.refuse(node, "parameters are not allowed: write the value")
        if isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if name.startswith(_READERS) or type(node).__name__.startswith("Read"):
                raise self.refuse(node, f"{name}() is not allowed: file readers and table "
                                        "functions cannot run inside a row expression")
            raise self.refuse(node, f"function {name}() is not allowed; the functions are "
                                    f"{', '.join(_NAMES)} and CAST/TRY_CAST")
        raise self.refuse(node, f"{node.key.upper()} is not allowed in a row expression")

    # -- leaves -----------------------------------------------------------------------------
    def column(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        if any(node.args.get(k) for k in ("table", "db", "catalog")):
            raise self.refuse(node, "qualified column names are not allowed: write the column "
                                    "name alone")
        self.only(node, "this")
        ident = node.this
        if not isinstance(ident, exp.Identifier):
            raise self.refuse(node, "not a column name")
        name = str(ident.this)
        quoted = bool(ident.args.get("quoted"))
        found = name if name in self.types else None
        if found is None and not quoted:
            same = self._lower.get(name.lower(), [])
            found = same[0] if len(same) == 1 else None
        if found is None:
            raise self.fail(self._unknown(name, quoted), name)
        if found.startswith(RESERVED_PREFIX):
            raise self.fail(f"column {found!r}: names beginning with {RESERVED_PREFIX!r} are "
                            "reserved for the engines' own columns", found)
        self.columns.append(found)
        return exp.column(found, quoted=True), self.types[found]

    def _unknown(self, name: str, quoted: bool) -> str:
        names = list(self.types)
        close = [c for c in names if c.lower() == name.lower()]
        close = close or difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        if quoted:
            hint += " (double quotes name a column: write text in single quotes, 'like this')"
        return f"column {name!r} not found; the table has columns {names}{hint}"

    def literal(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        if node.is_string:
            return exp.Literal.string(str(node.this)), "string"
        return self.number(node, str(node.this))

    def number(self, node: Any, text: str, negate: bool = False) -> tuple[Any, str]:
        sign = "-" if negate else ""
        try:
            value = int(sign + text)
        except ValueError:
            value = None
        if value is not None and -(2**63) <= value < 2**63:
            return _integer(value), "integer"
        try:
            number = float(sign + text)
        except ValueError:
            raise self.refuse(node, "not a number") from None
        if not math.isfinite(number):
            raise self.refuse(node, "number out of the float64 range")
        return _float(number), "float"

    def boolean(self, node: Any) -> tuple[Any, str]:
        return _exp().Boolean(this=bool(node.this)), "boolean"

    def null(self, node: Any) -> tuple[Any, str]:
        return _exp().Null(), _NULL

    def paren(self, node: Any) -> tuple[Any, str]:
        inner, kind = self.visit(node.this)
        return _exp().Paren(this=inner), kind

    # -- operators --------------------------------------------------------------------------
    def numeric(self, node: Any, *operands: Any) -> list[Any]:
        """Visit ``operands``, which must be numbers (or NULL); return them as DOUBLE."""
        out = []
        for operand in operands:
            sub, kind = self.visit(operand)
            if kind not in (*_NUMERIC, _NULL):
                op = _SYMBOLS.get(node.key, node.key)
                raise self.refuse(node, f"{op} needs numbers, got a {kind} "
                                        f"({self.part(operand)}); CAST(... AS DOUBLE) converts "
                                        "text")
            out.append(_p(_double(sub)))
        return out

    def arithmetic(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        self.only(node, "this", "expression", "typed", "safe")
        a, b = self.numeric(node, node.this, node.expression)
        if isinstance(node, exp.Div | exp.Mod):  # x / 0 and x % 0 are NULL on both engines
            b = exp.Nullif(this=b, expression=_float(0.0))
        return type(node)(this=a, expression=b), "float"

    def negate(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        inner = node.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Literal) and not inner.is_string:
            return self.number(inner, str(inner.this), negate=True)
        (a,) = self.numeric(node, node.this)
        return exp.Paren(this=exp.Neg(this=a)), "float"

    def compare(self, node: Any) -> tuple[Any, str]:
        a, ka = self.visit(node.this)
        b, kb = self.visit(node.expression)
        self.unify(node, [ka, kb], comparable=True)
        return type(node)(this=_p(a), expression=_p(b)), "boolean"

    def logic(self, node: Any) -> tuple[Any, str]:
        out = [self.boolean_operand(node, x) for x in (node.this, node.expression)]
        return type(node)(this=_p(out[0]), expression=_p(out[1])), "boolean"

    def boolean_operand(self, node: Any, operand: Any) -> Any:
        sub, kind = self.visit(operand)
        if kind not in ("boolean", _NULL):
            raise self.refuse(node, f"{node.key.upper()} needs true/false operands, got a "
                                    f"{kind} ({self.part(operand)})")
        return sub

    def not_(self, node: Any) -> tuple[Any, str]:
        return _exp().Not(this=_p(self.boolean_operand(node, node.this))), "boolean"

    def is_(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        self.only(node, "this", "expression")
        sub, kind = self.visit(node.this)
        test = node.expression
        if isinstance(test, exp.Null):
            return exp.Is(this=_p(sub), expression=exp.Null()), "boolean"
        if isinstance(test, exp.Boolean) and kind in ("boolean", _NULL):
            return exp.Is(this=_p(sub), expression=exp.Boolean(this=bool(test.this))), "boolean"
        raise self.refuse(node, "IS tests NULL, or TRUE/FALSE of a true/false value")

    def in_(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        if node.args.get("query") is not None:
            raise self.refuse(node, "subqueries are not allowed: list the values")
        self.only(node, "this", "expressions")
        sub, kind = self.visit(node.this)
        items = [self.visit(x) for x in node.expressions]
        self.unify(node, [kind, *(k for _, k in items)], comparable=True)
        return exp.In(this=_p(sub), expressions=[_p(x) for x, _ in items]), "boolean"

    def between(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        self.only(node, "this", "low", "high")
        parts = [self.visit(node.args[k]) for k in ("this", "low", "high")]
        self.unify(node, [k for _, k in parts], comparable=True)
        x, lo, hi = (_p(s) for s, _ in parts)
        return exp.Between(this=x, low=lo, high=hi), "boolean"

    def like(self, node: Any, escape: Any = None) -> tuple[Any, str]:
        exp = _exp()
        self.only(node, "this", "expression", "negate")
        sub, kind = self.visit(node.this)
        if kind not in ("string", _NULL):
            raise self.refuse(node, f"{node.key.upper()} needs text, got a {kind}")
        pattern = node.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            raise self.refuse(node, "the pattern must be a text literal")
        text = str(pattern.this)
        if escape is None:  # no escape character: '!' escapes only itself
            text, char = text.replace("!", "!!"), "!"
        else:
            if not (isinstance(escape, exp.Literal) and escape.is_string
                    and len(str(escape.this)) == 1):
                raise self.refuse(node, "ESCAPE takes one character in quotes")
            char = str(escape.this)
        out = type(node)(this=_p(sub), expression=exp.Literal.string(text))
        out = exp.Escape(this=out, expression=exp.Literal.string(char))
        if node.args.get("negate"):
            out = exp.Not(this=exp.Paren(this=out))
        return out, "boolean"

    def escape(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        if not isinstance(node.this, exp.Like | exp.ILike):
            raise self.refuse(node, "ESCAPE belongs to LIKE")
        return self.like(node.this, node.expression)

    def concat(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        self.only(node, "this", "expression", "safe")
        parts = [self.visit(x) for x in (node.this, node.expression)]
        for (_, kind), operand in zip(parts, (node.this, node.expression), strict=True):
            if kind not in ("string", _NULL):
                raise self.refuse(node, f"|| joins text, got a {kind} ({self.part(operand)}); "
                                        "CAST(... AS VARCHAR) converts integers")
        return exp.DPipe(this=_p(parts[0][0]), expression=_p(parts[1][0]), safe=True), "string"

    # -- CASE and friends -------------------------------------------------------------------
    def case(self, node: Any) -> tuple[Any, str]:
        self.only(node, "this", "ifs", "default")
        subject = node.args.get("this")
        subj = self.visit(subject) if subject is not None else None
        branches, kinds = [], []
        for branch in node.args.get("ifs") or []:
            self.only(branch, "this", "true")
            if subj is not None:  # CASE x WHEN v: x = v, the same on both engines
                cond, kw = self.visit(branch.this)
                self.unify(node, [subj[1], kw], comparable=True)
            else:
                cond = self.boolean_operand(node, branch.this)
            value, kind = self.visit(branch.args["true"])
            branches.append((cond, value))
            kinds.append(kind)
        default = node.args.get("default")
        out_default = None
        if default is not None:
            out_default, kind = self.visit(default)
            kinds.append(kind)
        kind = self.unify(node, kinds)
        out = _case(branches, out_default)
        if subj is not None:
            out.set("this", _p(subj[0]))
        return out, kind

    def if_(self, node: Any) -> tuple[Any, str]:
        self.only(node, "this", "true", "false")
        cond = self.boolean_operand(node, node.this)
        a, ka = self.visit(node.args["true"])
        kinds = [ka]
        b = None
        if node.args.get("false") is not None:
            b, kb = self.visit(node.args["false"])
            kinds.append(kb)
        return _case([(cond, a)], b), self.unify(node, kinds)

    def variadic(self, node: Any) -> tuple[Any, str]:
        """COALESCE, GREATEST, LEAST: arguments of one type; NULLIF: two."""
        exp = _exp()
        self.only(node, "this", "expressions", "expression", "ignore_nulls")
        args = [node.this, *(node.expressions or [])]
        if node.args.get("expression") is not None:
            args.append(node.expression)
        visited = [self.visit(a) for a in args]
        kind = self.unify(node, [k for _, k in visited],
                          comparable=not isinstance(node, exp.Coalesce))
        subs = [s for s, _ in visited]
        if isinstance(node, exp.Nullif):
            return exp.Nullif(this=subs[0], expression=subs[1]), kind
        ignore = {"ignore_nulls": True} if not isinstance(node, exp.Coalesce) else {}
        return type(node)(this=subs[0], expressions=subs[1:], **ignore), kind

    def unify(self, node: Any, kinds: Sequence[str], comparable: bool = False) -> str:
        """The common type of ``kinds`` (integers and floats mix into float; NULL fits all);
        refuse mixtures, and values of type ``other`` where ``comparable``."""
        known = [k for k in kinds if k != _NULL]
        if not known:
            return _NULL
        if all(k in _NUMERIC for k in known):
            return "float" if "float" in known else "integer"
        if len(set(known)) > 1:
            raise self.refuse(node, f"mixes values of types {sorted(set(known))}; CAST one "
                                    "side")
        if comparable and known[0] == "other":
            raise self.refuse(node, "values of this column type (a date, a list...) can only "
                                    "be tested with IS [NOT] NULL")
        return known[0]

    # -- functions --------------------------------------------------------------------------
    def math1(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        self.only(node, "this")
        copies = 3 if isinstance(node, exp.Floor | exp.Ceil) else 2 if isinstance(
            node, exp.Ln) else 1
        with self.copies(copies, node):
            (x,) = self.numeric(node, node.this)
        if isinstance(node, exp.Ln):  # NULL for x <= 0 on both engines (DuckDB: -inf/NaN)
            return _case([(exp.GT(this=x.copy(), expression=_float(0.0)), exp.Ln(this=x))]), \
                "float"
        if isinstance(node, exp.Floor):
            return _floor(x), "float"
        if isinstance(node, exp.Ceil):
            return _ceil(x), "float"
        return type(node)(this=x), "float"

    def log(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        base = node.this
        if node.expression is None or not (
            isinstance(base, exp.Literal) and not base.is_string and str(base.this) == "10"
        ):
            raise self.refuse(node, "log(x) means log10 on DuckDB and ln on Spark: write ln(x) "
                                    "or log10(x)")
        with self.copies(2, node):
            (x,) = self.numeric(node, node.expression)
        value = exp.Log(this=_integer(10), expression=x)
        return _case([(exp.GT(this=x.copy(), expression=_float(0.0)), value)]), "float"

    def power(self, node: Any) -> tuple[Any, str]:
        self.only(node, "this", "expression")
        a, b = self.numeric(node, node.this, node.expression)
        return _exp().Pow(this=a, expression=b), "float"

    def round_(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        self.only(node, "this", "decimals")
        with self.copies(7, node):
            (x,) = self.numeric(node, node.this)
        digits: int | None = 0
        if node.args.get("decimals") is not None:
            digits = self.int_literal(node.args["decimals"])
        if digits is None or not -15 <= digits <= 15:
            raise self.refuse(node, "round's decimals must be a whole number from -15 to 15")
        d = digits

        def scaled(v: Any) -> Any:  # |x| scaled by 10^d, plus one half
            if d >= 0:
                s = exp.Mul(this=_p(v), expression=_float(10.0**d))
            else:
                s = exp.Div(this=_p(v), expression=_float(10.0**-d))
            return exp.Add(this=exp.Paren(this=s), expression=_float(0.5))

        def unscale(v: Any) -> Any:
            if d >= 0:
                return exp.Div(this=_p(v), expression=_float(10.0**d))
            return exp.Mul(this=_p(v), expression=_float(10.0**-d))

        neg = exp.Paren(this=exp.Neg(this=x.copy()))
        below = exp.LT(this=x.copy(), expression=_float(0.0))
        value = _case([(below, exp.Neg(this=_p(unscale(_floor(exp.Paren(this=scaled(neg)))))))],
                      unscale(_floor(exp.Paren(this=scaled(x)))))
        return value, "float"

    def text1(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        self.only(node, "this")
        sub = self.text_operand(node, node.this)
        kind = "integer" if isinstance(node, exp.Length) else "string"
        return type(node)(this=sub), kind

    def text_operand(self, node: Any, operand: Any) -> Any:
        sub, kind = self.visit(operand)
        if kind not in ("string", _NULL):
            raise self.refuse(node, f"{node.key}() needs text, got a {kind} "
                                    f"({self.part(operand)})")
        return sub

    def substring(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        self.only(node, "this", "start", "length")
        sub = self.text_operand(node, node.this)
        start = self.int_literal(node.args.get("start"))
        if start is None or start == 0:
            raise self.refuse(node, "substring's start must be a whole number literal, not 0 "
                                    "(1 is the first character; -1 the last)")
        args: dict[str, Any] = {"this": sub, "start": _integer(start)}
        if node.args.get("length") is not None:
            n = self.int_literal(node.args["length"])
            if n is None or n < 0:
                raise self.refuse(node, "substring's length must be a whole number literal >= 0")
            args["length"] = _integer(n)
        return exp.Substring(**args), "string"

    def int_literal(self, arg: Any) -> int | None:
        """The value of a whole-number literal (``3``, ``-3``, ``(3)``), else None."""
        exp = _exp()
        while isinstance(arg, exp.Paren):
            arg = arg.this
        sign = 1
        if isinstance(arg, exp.Neg):
            sign, arg = -1, arg.this
        if isinstance(arg, exp.Literal) and not arg.is_string and str(arg.this).isdigit():
            return sign * int(str(arg.this))
        return None

    def replace(self, node: Any) -> tuple[Any, str]:
        self.only(node, "this", "expression", "replacement")
        subs = [self.text_operand(node, node.args[k])
                for k in ("this", "expression", "replacement")]
        return _exp().Replace(this=subs[0], expression=subs[1], replacement=subs[2]), "string"

    def starts_with(self, node: Any) -> tuple[Any, str]:
        self.only(node, "this", "expression")
        a, b = (self.text_operand(node, x) for x in (node.this, node.expression))
        return _exp().StartsWith(this=a, expression=b), "boolean"

    def cast(self, node: Any) -> tuple[Any, str]:
        exp = _exp()
        self.only(node, "this", "to", "safe", "requires_string")
        with self.copies(9, node):  # at most: to BIGINT from a float or text
            sub, kind = self.visit(node.this)
        to = node.args["to"]
        goal = CAST_TARGETS.get(str(to.this.value)) if isinstance(to, exp.DataType) else None
        if goal is None or (to.expressions and goal != "float"):
            raise self.refuse(node, f"CAST to {to.sql('duckdb')} is not allowed; the targets "
                                    "are DOUBLE, BIGINT and VARCHAR")
        if kind == "other":
            raise self.refuse(node, "values of this column type cannot be cast")

        def try_cast(v: Any, t: str) -> Any:
            return exp.TryCast(this=v, to=exp.DataType.build(t), safe=True)

        if goal == "float":
            return try_cast(sub, "DOUBLE"), "float"
        if goal == "string":
            if kind == "float":
                raise self.refuse(node, "a float cannot be cast to text (DuckDB and Spark "
                                        "format floats differently); round it and CAST it to "
                                        "BIGINT first")
            return try_cast(sub, "VARCHAR"), "string"
        if kind in ("integer", "boolean", _NULL):
            return try_cast(sub, "BIGINT"), "integer"
        number = _p(try_cast(sub, "DOUBLE")) if kind == "string" else _p(_double(sub))
        # NaN and ±inf have no BIGINT: NULL on both engines
        finite = exp.Not(this=exp.Paren(this=exp.Or(
            this=exp.IsNan(this=number.copy()),
            expression=exp.GT(this=exp.Abs(this=number.copy()), expression=_float(_MAX_FLOAT)))))
        return _case([(finite, try_cast(_p(_trunc(number)), "BIGINT"))]), "integer"


_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "neg": "unary -"}
_HANDLERS: dict[type, Callable[[_Checker, Any], tuple[Any, str]]] = {}
_NAMES: list[str] = sorted({sig.split("(")[0] for sig in FUNCTIONS})


def _register() -> None:
    exp = _exp()
    table: dict[Callable[[_Checker, Any], tuple[Any, str]], tuple[type, ...]] = {
        _Checker.column: (exp.Column,),
        _Checker.literal: (exp.Literal,),
        _Checker.boolean: (exp.Boolean,),
        _Checker.null: (exp.Null,),
        _Checker.paren: (exp.Paren,),
        _Checker.arithmetic: (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod),
        _Checker.negate: (exp.Neg,),
        _Checker.compare: (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ,
                           exp.NullSafeNEQ),
        _Checker.logic: (exp.And, exp.Or),
        _Checker.not_: (exp.Not,),
        _Checker.is_: (exp.Is,),
        _Checker.in_: (exp.In,),
        _Checker.between: (exp.Between,),
        _Checker.like: (exp.Like, exp.ILike),
        _Checker.escape: (exp.Escape,),
        _Checker.concat: (exp.DPipe,),
        _Checker.case: (exp.Case,),
        _Checker.if_: (exp.If,),
        _Checker.variadic: (exp.Coalesce, exp.Greatest, exp.Least, exp.Nullif),
        _Checker.math1: (exp.Abs, exp.Sqrt, exp.Exp, exp.Ln, exp.Floor, exp.Ceil),
        _Checker.log: (exp.Log,),
        _Checker.power: (exp.Pow,),
        _Checker.round_: (exp.Round,),
        _Checker.text1: (exp.Lower, exp.Upper, exp.Length, exp.Trim),
        _Checker.substring: (exp.Substring,),
        _Checker.replace: (exp.Replace,),
        _Checker.starts_with: (exp.StartsWith,),
        _Checker.cast: (exp.Cast, exp.TryCast),
    }
    for handler, classes in table.items():
        for cls in classes:
            _HANDLERS[cls] = handler


def _handlers_ready() -> None:
    if not _HANDLERS:
        _register()
