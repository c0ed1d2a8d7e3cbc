"""The row-expression language (engines/expressions.py): what it allows, what it refuses and
how, the types it infers, and that what it generates reads back as one expression. What the
engines compute from it is in tests/engines/test_conformance.py."""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from approxdp.engines.expressions import (
    FUNCTIONS,
    MAX_EXPRESSION_LENGTH,
    RowExpression,
    ValueType,
    parse_expression,
)
from approxdp.errors import ExpressionError, ParameterTypeError

TYPES: dict[str, ValueType] = {
    "age": "integer", "sex": "string", "income": "float", "member": "boolean",
    "joined": "other", "hours-per-week": "integer", "Name": "string", 'we"ird': "integer",
    "ünï": "float",
}  # fmt: skip

#: One example per function of FUNCTIONS, with the type it gives.
EXAMPLES: dict[str, tuple[str, str]] = {
    "abs": ("abs(age - 40)", "float"),
    "sqrt": ("sqrt(income)", "float"),
    "exp": ("exp(income / 1e5)", "float"),
    "ln": ("ln(income + 1)", "float"),
    "log10": ("log10(income)", "float"),
    "power": ("power(age, 2)", "float"),
    "floor": ("floor(age / 10) * 10", "float"),
    "ceil": ("ceil(income)", "float"),
    "round": ("round(income, 2)", "float"),
    "greatest": ("greatest(age, 18)", "integer"),
    "least": ("least(income, 1e5)", "float"),
    "coalesce": ("coalesce(sex, 'unknown')", "string"),
    "nullif": ("nullif(age, 0)", "integer"),
    "if": ("if(member, 1, 0)", "integer"),
    "lower": ("lower(sex)", "string"),
    "upper": ("upper(sex)", "string"),
    "length": ("length(sex)", "integer"),
    "trim": ("trim(sex)", "string"),
    "substring": ("substring(sex, 1, 1)", "string"),
    "replace": ("replace(sex, 'F', 'W')", "string"),
    "starts_with": ("starts_with(sex, 'F')", "boolean"),
}


def test_every_function_has_an_example() -> None:
    assert {sig.split("(")[0] for sig in FUNCTIONS} == set(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_allowed_function_parses_with_its_type(name: str) -> None:
    text, kind = EXAMPLES[name]
    expr = parse_expression(text, TYPES)
    assert isinstance(expr, RowExpression) and expr.value_type == kind and expr.text == text


@pytest.mark.parametrize(("text", "kind", "columns"), [
    ("age > 30 AND sex = 'Female'", "boolean", ("age", "sex")),
    ("income * 1.5 + age", "float", ("income", "age")),
    ("NOT member OR age IN (18, 19, 20.5)", "boolean", ("member", "age")),
    ("age BETWEEN 18 AND 65 AND income IS NOT NULL", "boolean", ("age", "income")),
    ("sex LIKE 'F%' OR sex ILIKE 'w%'", "boolean", ("sex",)),
    ("CASE WHEN age < 30 THEN 'young' WHEN age < 60 THEN 'middle' END", "string", ("age",)),
    ("CASE sex WHEN 'Female' THEN 1 ELSE 0 END", "integer", ("sex",)),
    ('"hours-per-week" >= 40', "boolean", ("hours-per-week",)),
    ("NAME = 'x'", "boolean", ("Name",)),  # unquoted: case-insensitive
    ('"we""ird" > 1', "boolean", ('we"ird',)),  # a quote inside a quoted name
    ("ünï > 0", "boolean", ("ünï",)),  # non-ASCII names
    ("joined IS NULL", "boolean", ("joined",)),
    ("CAST(age AS VARCHAR) || '-' || sex", "string", ("age", "sex")),
    ("TRY_CAST(sex AS DOUBLE)", "float", ("sex",)),
    ("age::BIGINT", "integer", ("age",)),
    ("-5", "integer", ()),
    ("member IS TRUE", "boolean", ("member",)),
    ("income IS DISTINCT FROM 0", "boolean", ("income",)),
    ("sex = 'it''s; DROP TABLE x; --'", "boolean", ("sex",)),  # all inside a string literal
])
def test_allowed_expressions(text: str, kind: str, columns: tuple[str, ...]) -> None:
    expr = parse_expression(text, TYPES)
    assert (expr.value_type, expr.columns) == (kind, columns)


#: (expression, what the error says, the offending part it names)
REFUSED = [
    ("age > 1; DROP TABLE t", "statement separators", ";"),
    ("age > 1;", "statement separators", ";"),
    ("age > 1 -- and the rest", "comments are not allowed", " and the rest"),
    ("/* hidden */ age > 1", "comments are not allowed", " hidden "),
    ("(SELECT max(age) FROM t)", "subqueries are not allowed", "(SELECT MAX(age) FROM t)"),
    ("age IN (SELECT age FROM t)", "subqueries are not allowed", "age IN (SELECT"),
    ("EXISTS (SELECT 1)", "subqueries are not allowed", "EXISTS(SELECT 1)"),
    ("read_csv('/etc/passwd') IS NULL", "file readers", "READ_CSV('/etc/passwd')"),
    ("read_parquet('s3://bucket/x.parquet') IS NULL", "file readers", "READ_PARQUET("),
    ("glob('*') IS NULL", "file readers", "GLOB("),
    ("length(getenv('HOME')) > 0", r"function getenv\(\) is not allowed", "GETENV('HOME')"),
    ("random() < 0.5", r"function rand\(\) is not allowed", "RANDOM()"),
    ("current_date IS NULL", "is not allowed", "CURRENT_DATE"),
    ("sum(income) > 0", r"aggregate sum\(\) is not allowed", "SUM(income)"),
    ("count(*) > 0", r"aggregate count\(\) is not allowed", "COUNT(*)"),
    ("row_number() OVER () < 10", "window functions", "ROW_NUMBER() OVER ()"),
    ("age > $1", "parameters are not allowed", "$1"),
    ("age > ?", "parameters are not allowed", "?"),
    ("t.age > 1", "qualified column names", "t.age"),
    ("*", r"'\*' is not allowed", "*"),
    ("agee > 1", "column 'agee' not found.*did you mean 'age'", "agee"),
    ('"AGE" > 1', "column 'AGE' not found.*did you mean 'age'", "AGE"),
    ("sex = \"Female\"", "column 'Female' not found.*single quotes", "Female"),
    ("__rank > 1", "not found", "__rank"),
    ("age + 'a'", r"\+ needs numbers, got a string", "age + 'a'"),
    ("sex > 1", "mixes values of types", "sex > 1"),
    ("joined > 1", "mixes values", "joined > 1"),
    ("age AND member", "AND needs true/false operands", "age AND member"),
    ("sex LIKE sex", "pattern must be a text literal", "sex LIKE sex"),
    ("log(income)", "write ln", "LOG(income)"),
    ("age // 2", "INTDIV is not allowed", "age // 2"),
    ("CAST(income AS VARCHAR)", "a float cannot be cast to text", "CAST(income AS TEXT)"),
    ("CAST(age AS DATE)", "CAST to DATE is not allowed", "CAST(age AS DATE)"),
    ("substring(sex, 0, 2)", "start must be a whole number literal, not 0", "SUBSTRING"),
    ("round(income, age)", "decimals must be a whole number", "ROUND(income, age)"),
    ("trim(BOTH 'x' FROM sex)", "this form of TRIM", "TRIM(sex, 'x')"),
    ("1e400", "out of the float64 range", "1e400"),
    ("[1, 2]", r"function array\(\) is not allowed", "[1, 2]"),
    ("age -> 'a'", "is not allowed", ""),
    ("x'41' = sex", "cannot be read as SQL", ""),
    ("'unterminated", "cannot be read as SQL", ""),
    ("", "empty", ""),
    ("   ", "empty", ""),
    ("NULL", "NULL for every row", "NULL"),
    ("age, sex", "cannot be read as SQL", ""),
]


@pytest.mark.parametrize(("text", "match", "part"), REFUSED)
def test_refused_expressions_are_typed_errors_naming_the_part(
    text: str, match: str, part: str
) -> None:
    with pytest.raises(ExpressionError, match=match) as info:
        parse_expression(text, TYPES, what="filter")
    assert info.value.part.startswith(part), info.value.part
    assert info.value.expression == text
    assert str(info.value).startswith("filter ")
    assert isinstance(info.value, ValueError)


def test_a_filter_must_be_true_or_false() -> None:
    with pytest.raises(ExpressionError, match="must be true or false for each row"):
        parse_expression("age + 1", TYPES, role="predicate")
    assert parse_expression("member", TYPES, role="predicate").value_type == "boolean"
    assert parse_expression("NULL", TYPES, role="predicate").value_type == "boolean"


def test_wrong_argument_types() -> None:
    with pytest.raises(ParameterTypeError, match="must be a string of SQL"):
        parse_expression(42, TYPES)  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match="role"):
        parse_expression("age", TYPES, role="where")  # type: ignore[arg-type]


def test_size_limits_are_errors_not_crashes() -> None:
    with pytest.raises(ExpressionError, match="longer than"):
        parse_expression("age + " * (MAX_EXPRESSION_LENGTH // 6 + 1) + "1", TYPES)
    with pytest.raises(ExpressionError, match="too large"):
        parse_expression(" + ".join(["age"] * 900), TYPES)
    with pytest.raises(ExpressionError, match=r"nested too deeply|too large|cannot be read"):
        parse_expression("(" * 4000 + "age" + ")" * 4000, TYPES)
    with pytest.raises(ExpressionError, match="too large"):  # round() repeats its operand
        parse_expression("round(" * 12 + "income" + ")" * 12, TYPES)


def test_generated_sql_quotes_every_identifier_and_escapes_literals() -> None:
    expr = parse_expression("\"we\"\"ird\" > 1 AND sex = 'a''b\\c'", TYPES)
    assert expr.sql("duckdb") == '("we""ird" > 1) AND ("sex" = \'a\'\'b\\c\')'
    assert expr.sql("spark") == "(`we\"ird` > 1) AND (`sex` = 'a\\'b\\\\c')"


def _reads_back(expr: RowExpression) -> None:
    import sqlglot

    for dialect in ("duckdb", "spark"):
        sql = expr.sql(dialect)  # type: ignore[arg-type]
        trees = sqlglot.parse(sql, read=dialect)
        assert len(trees) == 1 and trees[0] is not None, sql
        assert not any(node.comments for node in trees[0].walk()), sql


@given(st.text(alphabet=string.printable + "éü😀\u2028", max_size=60))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_text_gives_an_expression_or_a_typed_error(text: str) -> None:
    """Fuzzing with arbitrary text: never an untyped exception (a crash in the parser)."""
    try:
        expr = parse_expression(text, TYPES)
    except (ExpressionError, ParameterTypeError):
        return
    _reads_back(expr)


#: Tokens of the language and of attacks on it, for token-soup fuzzing (mostly parseable).
TOKENS = ["age", "income", "sex", "member", '"hours-per-week"', "1", "2.5", "-", "+", "*",
          "/", "%", "(", ")", "=", "<", ">=", "AND", "OR", "NOT", "'a'", "'--'", "';'", "CASE",
          "WHEN", "THEN", "ELSE", "END", "IN", "BETWEEN", "IS", "NULL", "LIKE", "round(",
          "floor(", "CAST(", "AS", "BIGINT", "DOUBLE", ",", "||", "coalesce(", "read_csv(",
          "SELECT", ";", "--", "/*", "*/", "$1"]


@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=14))
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_token_soup_gives_an_expression_or_a_typed_error(tokens: list[str]) -> None:
    """Fuzzing with the language's own tokens: whatever is accepted is written out for both
    engines as exactly one expression without comments."""
    try:
        expr = parse_expression(" ".join(tokens), TYPES)
    except (ExpressionError, ParameterTypeError):
        return
    _reads_back(expr)


def test_the_guide_lists_every_function() -> None:
    """docs/guide/transformations.md's table of functions is the allow-list, in order."""
    from pathlib import Path

    guide = Path(__file__).resolve().parents[2] / "docs" / "guide" / "transformations.md"
    rows = [line.split("|")[1].strip().strip("`") for line in guide.read_text().splitlines()
            if line.startswith("| `") and "(" in line.split("|")[1]]
    listed = [r for r in rows if r.split("(")[0] in EXAMPLES]
    assert listed == list(FUNCTIONS)
