"""Spec files of several queries, for ``approxdp release batch`` and ``approxdp plan``.

A spec is TOML (read with the standard library's ``tomllib``) or JSON (``.json``)::

    file = "people.parquet"        # or a folder of Parquet files, or a glob 'data/*/*.parquet'
    epsilon = 1.0                  # the whole batch's budget (release batch)
    delta = 1e-6
    privacy_unit = "person_id"     # optional, with max_partitions, max_rows_per_partition,
    neighbouring = "add-remove"    # neighbouring, method, level, casts = {amount = "double"},
                                   # cast_errors = "drop" (or "error": refuse values that are
                                   # not numbers)
    engine = "duckdb"              # or "spark" (release batch --engine wins)
    where = ["sex = 'F'", "age > 30"]         # optional: keep rows where all hold (or one string)
    derive = {net = "gain - loss"}            # optional: new columns, computed before `where`

    [[query]]
    kind = "count"
    half_width = 50                # a target for approxdp plan (optional)

    [[query]]
    kind = "mean"                  # any kind of approxdp.releases.kinds.RELEASE_KINDS
    column = "age"                 # the value column (every kind but count and histogram)
    bounds = [17, 90]              # sum, mean, median, quantiles, variance, std
    by = ["sex"]                   # sum, mean: group columns (optional)
    columns = ["sex"]              # histogram: the columns to count over
    domain = {sex = ["F", "M"]}    # optional: public values of the group columns
    qs = [0.1, 0.9]                # quantiles (default 0.25, 0.5, 0.75)
    bins = 64                      # median, quantiles: the tree's leaves, a power of
    branching = 8                  # its branching (defaults 1024 and 32)
    weight = 2.0                   # optional: relative weight in the joint calibration

Every query is part of ONE plan: calibrated jointly, charged as one spend; each query's share
of it is w/W, its weight over the sum of the weights (reported with its result). Private
bounds are a query of their own (``kind = "bounds"``); ``bounds = "private"`` is refused in a
spec, since bounds estimated from the data's noisy release can only be used by a second,
later release (two spends: ``approxdp release KIND FILE COLUMN --bounds private``).

``derive`` and ``where`` transform the table before every query (as ``--derive`` and
``--where`` do on the command line, :mod:`approxdp.cli.row_options`): the derived columns
first, in the order written, then the rows where every condition holds. They are keys of the
spec, not of a query: a plan's queries are released together from ONE table, in one scan and
one spend (:func:`approxdp.releases.execute.execute`); for another subset, write another
spec (its spend is a second one). A derived value column takes the query's ``bounds``.
``approxdp plan`` reads no data and ignores them (the noise does not depend on the rows).

A relative ``file`` is read relative to the spec's folder.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from approxdp.errors import DataError, InvalidParameterError, ParameterTypeError
from approxdp.releases.kinds import KindInputs, ReleaseKind, release_kind
from approxdp.releases.specs import Query

__all__ = ["BatchSpec", "load_spec"]
_TABLE_KEYS = ("privacy_unit", "max_partitions", "max_rows_per_partition", "neighbouring",
               "method", "casts", "cast_errors", "engine")
_TOP_KEYS = ("file", "epsilon", "delta", "level", "where", "derive", "query", *_TABLE_KEYS)
_QUERY_KEYS = ("kind", "column", "columns", "bounds", "by", "domain", "outside_domain", "qs",
               "bins", "branching", "weight", "half_width", "rmse", "name")


@dataclass(frozen=True)
class BatchSpec:
    """A parsed spec: the data, the budget, the table settings and the queries with their
    weights and accuracy targets (None where not given)."""

    path: Path
    file: str | None
    epsilon: float | None
    delta: float | None
    level: float
    table: dict[str, Any]
    queries: tuple[Query, ...]
    weights: tuple[float, ...] | None
    half_widths: tuple[float | None, ...]
    rmses: tuple[float | None, ...]
    where: tuple[str, ...] = ()
    derive: tuple[tuple[str, str], ...] = ()


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read spec {str(path)!r}: {exc.strerror}") from exc
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = tomllib.loads(text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:  # TOMLDecodeError, JSONDecodeError
        kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
        raise DataError(f"spec {str(path)!r} is not valid {kind}: {exc}") from exc
    if not isinstance(data, dict):
        raise ParameterTypeError(f"spec {str(path)!r} must be a table of settings and queries")
    return data


def _number(where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ParameterTypeError(f"{where} must be a number, got {value!r}")
    return float(value)


def _strings(where: str, value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ParameterTypeError(f"{where} must be a column name or a list of them, got "
                                 f"{value!r}")
    return list(value)


#: What a spec says for each input problem of a kind.
_PROBLEMS = {
    ("columns", "unexpected"): "a {kind} takes no column or columns",
    ("columns", "one"): 'a {kind} needs column = "NAME"',
    ("columns", "many"): "a {kind} needs columns = [\"NAME\", ...] to count over",
    ("bounds", "missing"): "a {kind} needs bounds = [LOW, HIGH] (values are clamped to them; "
                           "privacy parameters never come from the data)",
    ("bounds", "unexpected"): "a {kind} takes no bounds",
    ("by", "unexpected"): "a {kind} takes no by",
    ("domain", "unexpected"): "a {kind} takes no domain",
    ("qs", "unexpected"): "a {kind} takes no qs",
    ("tree", "unexpected"): "a {kind} takes no bins or branching (median, quantiles only)",
}


def _inputs(where: str, raw: Mapping[str, Any], kind: ReleaseKind) -> KindInputs:
    """The kind's inputs from a query's keys (checked against the kind)."""
    if kind.columns == "one":
        column = raw.get("column")
        if column is not None and not isinstance(column, str):
            raise ParameterTypeError(f"{where}: column must be a column name, got {column!r}")
        columns: tuple[str, ...] = (column,) if column is not None else ()
        if "columns" in raw:
            columns += tuple(_strings(f"{where}: columns", raw["columns"]))
    else:
        named = raw.get("columns", raw.get("column"))
        columns = () if named is None else tuple(_strings(f"{where}: columns", named))
    bounds = raw.get("bounds")
    if bounds == "private":
        raise InvalidParameterError(
            f"{where}: bounds = \"private\" cannot be part of a plan (the bounds would come "
            "from an earlier noisy release): add a kind = \"bounds\" query, then use its "
            "result in a second spec, or run 'approxdp release KIND FILE COLUMN --bounds "
            "private'"
        )
    if bounds is not None and (not isinstance(bounds, list) or len(bounds) != 2):
        raise ParameterTypeError(f"{where}: bounds must be [LOW, HIGH], got {bounds!r}")
    domain = raw.get("domain")
    if domain is not None and not isinstance(domain, Mapping):
        raise ParameterTypeError(f"{where}: domain must map columns to value lists")
    qs = raw.get("qs")
    if qs is not None and (not isinstance(qs, list) or not qs):
        raise ParameterTypeError(f"{where}: qs must be a list of probabilities, got {qs!r}")
    inputs = KindInputs(
        columns=columns,
        bounds=None if bounds is None else (_number(f"{where}: bounds", bounds[0]),
                                            _number(f"{where}: bounds", bounds[1])),
        by=tuple(_strings(f"{where}: by", raw["by"])) if "by" in raw else (),
        domain=domain, outside_domain=raw.get("outside_domain", "error"),
        qs=tuple(_number(f"{where}: qs", q) for q in qs or ()), name=raw.get("name", ""),
        bins=raw.get("bins"), branching=raw.get("branching"),
    )
    problem = kind.problem(inputs)
    if problem is not None:
        message = _PROBLEMS[problem.input, problem.problem].format(kind=kind.name)
        error = ParameterTypeError if problem.problem != "unexpected" else InvalidParameterError
        raise error(f"{where}: {message}")
    if kind.tree:
        try:
            inputs.tree()  # a power of branching, at most MAX_BINS leaves
        except (InvalidParameterError, ParameterTypeError) as exc:
            raise type(exc)(f"{where}: {exc}") from None
    return inputs


def _query(i: int, raw: object) -> tuple[Query, float, float | None, float | None]:
    where = f"query {i + 1}"
    if not isinstance(raw, Mapping):
        raise ParameterTypeError(f"{where} must be a table of settings, got {raw!r}")
    if "where" in raw or "derive" in raw:
        key = "where" if "where" in raw else "derive"
        raise InvalidParameterError(
            f"{where}: {key} is a key of the spec, at the top (it applies to every query): a "
            "batch's queries are one plan over one table; for another subset, write another "
            "spec"
        )
    unknown = sorted(set(raw) - set(_QUERY_KEYS))
    if unknown:
        raise InvalidParameterError(f"{where} has unknown key(s) {unknown}; allowed: "
                                    f"{list(_QUERY_KEYS)}")
    try:
        kind = release_kind(raw.get("kind"))
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"{where}: {exc}") from None
    query = kind.build(_inputs(where, raw, kind))
    weight = _number(f"{where}: weight", raw.get("weight", 1.0))
    half = raw.get("half_width")
    rmse = raw.get("rmse")
    return (query, weight,
            None if half is None else _number(f"{where}: half_width", half),
            None if rmse is None else _number(f"{where}: rmse", rmse))


def load_spec(path: Path) -> BatchSpec:
    """Parse and check the spec at ``path`` (TOML, or JSON for a ``.json`` file)."""
    data = _read(path)
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise InvalidParameterError(f"spec {str(path)!r} has unknown key(s) {unknown}; "
                                    f"allowed: {list(_TOP_KEYS)}")
    raw_queries = data.get("query")
    if not isinstance(raw_queries, list) or not raw_queries:
        raise InvalidParameterError(
            f"spec {str(path)!r} lists no query: add [[query]] tables (TOML) or a \"query\" "
            "list (JSON)"
        )
    parsed = [_query(i, q) for i, q in enumerate(raw_queries)]
    file = data.get("file")
    if file is not None and not isinstance(file, str):
        raise ParameterTypeError(f"file must be a path or glob, got {file!r}")
    if file is not None and "://" not in file and not Path(file).is_absolute():
        file = str(path.parent / file)
    weights = tuple(w for _, w, _, _ in parsed)
    engine = data.get("engine", "duckdb")
    if engine not in ("duckdb", "spark"):
        raise InvalidParameterError(f"engine must be \"duckdb\" or \"spark\", got {engine!r}")
    return BatchSpec(
        path=path, file=file,
        epsilon=None if "epsilon" not in data else _number("epsilon", data["epsilon"]),
        delta=None if "delta" not in data else _number("delta", data["delta"]),
        level=_number("level", data.get("level", 0.95)),
        table={k: data[k] for k in _TABLE_KEYS if k in data},
        queries=tuple(q for q, _, _, _ in parsed),
        weights=None if all(w == 1.0 for w in weights) else weights,
        half_widths=tuple(h for _, _, h, _ in parsed),
        rmses=tuple(r for _, _, _, r in parsed),
        where=_where(data.get("where", [])),
        derive=_derive(data.get("derive", {})),
    )


def _where(value: object) -> tuple[str, ...]:
    """The spec's ``where``: one condition or a list of them (all must hold)."""
    conditions = [value] if isinstance(value, str) else value
    if not isinstance(conditions, list) or not all(isinstance(c, str) for c in conditions):
        raise ParameterTypeError(
            f"where must be an SQL condition (a string) or a list of them, got {value!r}")
    return tuple(conditions)


def _derive(value: object) -> tuple[tuple[str, str], ...]:
    """The spec's ``derive``: {name: SQL expression}, computed in the order written."""
    if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and k and isinstance(v, str) for k, v in value.items()):
        raise ParameterTypeError(
            "derive must be a mapping of new column names to SQL expressions, e.g. derive = "
            f"{{net = \"gain - loss\"}}, got {value!r}")
    return tuple(value.items())


def targets(values: Sequence[float | None]) -> Sequence[float | None] | None:
    """Per-query targets, or None when no query has one."""
    return None if all(v is None for v in values) else list(values)
