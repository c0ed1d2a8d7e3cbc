"""The checker of row expressions (:mod:`approxdp.engines.expressions`), part two: the scalar
functions and casts, and the table of which method checks which node. Internal."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from approxdp.engines._expression_checker import _HANDLERS, _CheckerBase
from approxdp.engines._expression_language import (
    _MAX_FLOAT,
    _NULL,
    CAST_TARGETS,
    ValueType,
    _case,
    _ceil,
    _double,
    _exp,
    _float,
    _floor,
    _integer,
    _p,
    _trunc,
)
from approxdp.errors import ExpressionError


class _Checker(_CheckerBase):
    """Visits a parsed tree: refuses what is not allowed, infers types, returns the
    normalised tree and the columns read."""

    def __init__(self, types: dict[str, ValueType], fail: Callable[..., ExpressionError]):
        _handlers_ready()
        super().__init__(types, fail)

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
