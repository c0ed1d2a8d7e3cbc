"""The checker of row expressions (:mod:`approxdp.engines.expressions`), part one: dispatch,
leaves, operators and CASE; the functions are in :mod:`._expression_functions`. Internal."""

from __future__ import annotations

import contextlib
import difflib
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from approxdp.engines._expression_language import (
    _MAX_COPIES,
    _NAMES,
    _NULL,
    _NUMERIC,
    _READERS,
    RESERVED_PREFIX,
    ValueType,
    _case,
    _double,
    _exp,
    _float,
    _integer,
    _p,
)
from approxdp.errors import ExpressionError

#: Node class → the checker method that handles it (filled by :mod:`._expression_functions`).
_HANDLERS: dict[type, Callable[[Any, Any], tuple[Any, str]]] = {}
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "neg": "unary -"}


class _CheckerBase:
    """Visits a parsed tree: refuses what is not allowed, infers types, returns the
    normalised tree and the columns read."""

    def __init__(self, types: dict[str, ValueType], fail: Callable[..., ExpressionError]):
        self.types = types
        self.fail = fail
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
