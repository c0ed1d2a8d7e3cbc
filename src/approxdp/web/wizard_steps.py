"""The release wizard's steps, without a browser: read the form, simulate, show the cost, release.

The steps, each a function:

1. :func:`schema_of` — the columns of a data file fixed at start (names and kinds only).
2. :func:`read_spec` — the privacy unit, query, bounds and budget typed into the form, checked
   with the API's typed errors.
3. :func:`simulate` — the same query on a *synthetic* table built from the schema and the
   declared bounds and domains (never from the data), with a throwaway in-memory accountant
   and a fixed seed: accuracy to expect, spending nothing; every number is marked a seeded
   simulation, NOT private.
4. :func:`cost_preview` — what the release will spend from the ledger and whether it fits.
5. :func:`release` — the real release: secure noise, paid through the ledger (the only step
   that spends).
6. :func:`release_json`, :func:`release_csv`, :func:`release_script` — the downloads: the
   result as ``approxdp release`` writes it, and a Python script that makes the same release
   with the API.
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from approxdp.accounting import PrivacyAccountant, read_ledger_settings
from approxdp.errors import DataError, InvalidParameterError
from approxdp.events import PrivacyEvent
from approxdp.releases.kinds import DEFAULT_QS, RELEASE_KINDS, KindInputs
from approxdp.releases.specs import CAST_ERRORS
from approxdp.reports.formatting import JSON_SCHEMA_VERSION, jsonable
from approxdp.reports.releases import (
    budget_dict,
    parse_domain,
    release_dict,
    typed_value,
    write_cells_csv,
)
from approxdp.web.config import DataFile, ServeConfig, data_file
from approxdp.web.forms import integer, on_field, parameter

__all__ = [
    "KINDS",
    "PARTITION_SELECTION",
    "SIMULATION_SEED",
    "ReleaseSpec",
    "cost_preview",
    "query_rows",
    "read_spec",
    "release",
    "release_csv",
    "release_json",
    "release_script",
    "schema_of",
    "simulate",
    "synthetic_table",
]

#: The statistics the wizard offers: every kind of the registry.
KINDS = tuple(RELEASE_KINDS)
#: Seed of every simulation (a simulation is reproducible; it is never a release).
SIMULATION_SEED = 20240518
#: Synthetic categories of a grouping column that has no declared domain.
_SYNTHETIC_CELLS = 5
_MAX_SIMULATED_ROWS = 1_000_000
#: Synthetic values of a column without bounds (private bounds are what is estimated).
_MADE_UP_RANGE = (1.0, 1000.0)


def schema_of(file: DataFile) -> dict[str, str]:
    """Column name → kind (``numeric``, ``string``, ``boolean``, ``other``) of a data file, in
    order. Reads the header only as far as the engine needs to type the columns.

    Raises:
        DataError: the file cannot be read as CSV or Parquet.
    """
    from approxdp.engines import engine_for

    engine = engine_for(str(file.path))
    table = engine.load(str(file.path))
    return {name: kind.value for name, kind in engine.schema(table).items()}


@dataclass(frozen=True, slots=True)
class ReleaseSpec:
    """One release, as the wizard's form describes it (everything public: no data in it).

    ``columns`` is the value column or the columns counted (histogram); ``domain`` maps
    grouping columns to their public values, as typed (``NULL`` for missing); ``casts`` are
    the columns converted to numbers first, and ``cast_errors`` what becomes of their values
    that are not numbers (``drop``: missing values; ``error``: the release is refused).
    """

    file: DataFile
    kind: str
    epsilon: float
    delta: float
    columns: tuple[str, ...] = ()
    bounds: tuple[float, float] | Literal["private"] | None = None
    by: tuple[str, ...] = ()
    domain: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    outside_domain: str = "error"
    level: float = 0.95
    privacy_unit: str | None = None
    max_partitions: int = 1
    max_rows_per_partition: int = 1
    neighbouring: str = "add-remove"
    qs: tuple[float, ...] = ()
    casts: tuple[str, ...] = ()
    cast_errors: str = "drop"

    @property
    def label(self) -> str:
        """``mean(age)``, ``histogram(sex, race)``, ``count`` — as the result is labelled."""
        if not self.columns:
            return self.kind
        return f"{self.kind}({', '.join(self.columns)})"

    @property
    def groups(self) -> tuple[str, ...]:
        """The columns that define cells: ``by`` (sum, mean) or ``columns`` (histogram)."""
        return self.columns if RELEASE_KINDS[self.kind].columns == "many" else self.by

    def inputs(self, schema: Mapping[str, str]) -> KindInputs:
        """The registry's inputs of this release (domain values typed like their columns)."""
        return KindInputs(columns=self.columns, bounds=self.bounds, by=self.by,
                          domain=_typed_domain(self, schema),
                          outside_domain="drop" if self.outside_domain == "drop" else "error",
                          qs=self.qs)


def _names(value: object) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence):
        return tuple(str(v) for v in value if str(v))
    raise InvalidParameterError(f"expected a list of column names, got {value!r}")


def _check_column(name: str, column: str, schema: Mapping[str, str]) -> None:
    if column not in schema:
        raise DataError(f"{name} column {column!r} not found; the table has columns "
                        f"{list(schema)}")


def read_spec(
    config: ServeConfig, form: Mapping[str, object], schema: Mapping[str, str] | None = None,
) -> ReleaseSpec:
    """The release the form describes, checked as far as it can be without the data.

    ``form`` keys: ``file`` (a key the server handed out), ``kind``, ``column``,
    ``bounds_mode`` (``given``: ``low`` and ``high``; ``private``: estimated first from a share
    of ε and δ, as ``--bounds private``), ``low``, ``high``, ``by``, ``columns``, ``domain``
    (lines ``COLUMN=V1,V2``), ``outside_domain``, ``epsilon``, ``delta``, ``level``,
    ``privacy_unit`` (empty: each row), ``max_partitions``, ``max_rows_per_partition``,
    ``neighbouring``, ``qs``, ``casts``, ``cast_errors``. Errors are tagged with their field
    (:func:`~.forms.on_field`) when the message does not name it.

    Raises:
        InvalidParameterError, ParameterTypeError, DataError: as the API raises them.
    """
    with on_field("file"):
        file = data_file(config, form.get("file"))
        schema = dict(schema) if schema is not None else schema_of(file)
    kind = str(form.get("kind") or "")
    if kind not in KINDS:
        with on_field("kind"):
            raise InvalidParameterError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    epsilon = parameter("epsilon", form.get("epsilon"), "epsilon_positive")
    delta = parameter("delta", form.get("delta"))
    level = parameter("level", form.get("level", "0.95"))
    unit = str(form.get("privacy_unit") or "") or None
    if unit is not None:
        with on_field("privacy_unit"):
            _check_column("privacy unit", unit, schema)
    max_partitions = integer("max_partitions", form.get("max_partitions", "1"), 1)
    max_rows = integer("max_rows_per_partition", form.get("max_rows_per_partition", "1"), 1)
    neighbouring = str(form.get("neighbouring") or "add-remove")
    if neighbouring not in ("add-remove", "replace-one"):
        with on_field("neighbouring"):
            raise InvalidParameterError(
                f"neighbouring must be 'add-remove' or 'replace-one', got {neighbouring!r}")
    outside = str(form.get("outside_domain") or "error")
    if outside not in ("error", "drop"):
        with on_field("outside_domain"):
            raise InvalidParameterError(
                f"outside_domain must be 'error' or 'drop', got {outside!r}")
    entry = RELEASE_KINDS[kind]
    with on_field("casts"):
        casts = _names(form.get("casts"))
        for column in casts:
            _check_column("cast", column, schema)
    cast_errors = str(form.get("cast_errors") or "drop")
    if cast_errors not in CAST_ERRORS:
        with on_field("cast_errors"):
            raise InvalidParameterError(
                f"cast_errors must be one of {list(CAST_ERRORS)}, got {cast_errors!r}")
    columns: tuple[str, ...] = ()
    bounds: tuple[float, float] | Literal["private"] | None = None
    by: tuple[str, ...] = ()
    qs: tuple[float, ...] = ()
    if entry.columns == "one":
        with on_field("column"):
            columns = _names(form.get("column"))[:1]
            if not columns:
                raise InvalidParameterError(f"{kind} needs a value column")
            _check_column("value", columns[0], schema)
            if schema[columns[0]] != "numeric" and columns[0] not in casts:
                raise DataError(
                    f"value column {columns[0]!r} is {schema[columns[0]]}, not numeric: add it "
                    "to the columns converted to numbers (values that are not numbers become "
                    "missing)")
    elif entry.columns == "many":
        with on_field("columns"):
            columns = _names(form.get("columns"))
            if not columns:
                raise InvalidParameterError(f"{kind} needs at least one column to count over")
            for column in columns:
                _check_column(kind, column, schema)
    mode = str(form.get("bounds_mode") or "given")
    if entry.bounds and mode not in ("given", "private"):
        with on_field("bounds_mode"):
            raise InvalidParameterError(
                f"bounds_mode must be 'given' or 'private', got {mode!r}")
    if entry.bounds and mode == "private":
        bounds = "private"
    elif entry.bounds:
        low = parameter("low", form.get("low"), "finite")
        high = parameter("high", form.get("high"), "finite")
        if not low < high:
            with on_field("high"):
                raise InvalidParameterError(
                    f"bounds must have low < high, got low={low:g}, high={high:g}")
        bounds = (low, high)
    if entry.groups:
        with on_field("by"):
            by = _names(form.get("by"))
            for column in by:
                _check_column("group-by", column, schema)
    if entry.qs:
        qs = _probabilities("qs", form.get("qs"))
    with on_field("domain"):
        lines = [ln.strip() for ln in str(form.get("domain") or "").splitlines() if ln.strip()]
        raw = parse_domain(lines) if entry.domain else {}
        if lines and not entry.domain:
            raise InvalidParameterError(f"{kind} takes no domain")
        groups = columns if entry.columns == "many" else by
        for column in raw:
            if column not in groups:
                raise InvalidParameterError(
                    f"domain column {column!r} is not one of the columns the cells are made "
                    f"of: {list(groups) or 'none (this query has no groups)'}")
            _typed_values(column, raw[column], schema)  # numbers for numeric columns
    return ReleaseSpec(
        file=file, kind=kind, epsilon=epsilon, delta=delta, columns=columns, bounds=bounds,
        by=by, domain={c: tuple(v) for c, v in raw.items()}, outside_domain=outside,
        level=level, privacy_unit=unit, max_partitions=max_partitions,
        max_rows_per_partition=max_rows, neighbouring=neighbouring, qs=qs, casts=casts,
        cast_errors=cast_errors,
    )


def _probabilities(name: str, text: object) -> tuple[float, ...]:
    """Probabilities typed as ``0.1, 0.5, 0.9`` (empty: the default quartiles)."""
    parts = [p for p in str(text or "").replace(";", ",").split(",") if p.strip()]
    if not parts:
        return DEFAULT_QS
    with on_field(name):
        return tuple(parameter(name, p, "quantile") for p in parts)


def _typed_values(column: str, raw: Sequence[str], schema: Mapping[str, str]) -> list[Any]:
    """Domain values typed like their column: NULL → None, numbers for numeric columns."""
    kind = schema.get(column, "string")
    return [typed_value(column, value, kind, "domain value") for value in raw]


def _typed_domain(spec: ReleaseSpec, schema: Mapping[str, str]) -> dict[str, list[Any]] | None:
    if not spec.domain:
        return None
    return {c: _typed_values(c, v, schema) for c, v in spec.domain.items()}


def _table_options(spec: ReleaseSpec) -> dict[str, Any]:
    options: dict[str, Any] = {
        "privacy_unit": spec.privacy_unit, "max_partitions": spec.max_partitions,
        "max_rows_per_partition": spec.max_rows_per_partition,
        "neighbouring": spec.neighbouring}
    if spec.casts:
        options["casts"] = {c: "double" for c in spec.casts}
        if spec.cast_errors != "drop":
            options["cast_errors"] = spec.cast_errors
    return options


def _run(table: Any, spec: ReleaseSpec, schema: Mapping[str, str]) -> Any:
    """The query on a PrivateTable (real or synthetic), through the registry of kinds."""
    return table.release_kind(spec.kind, spec.inputs(schema), epsilon=spec.epsilon,
                              delta=spec.delta, level=spec.level)


# -- simulation --------------------------------------------------------------------------------
def synthetic_table(spec: ReleaseSpec, schema: Mapping[str, str], rows: int) -> Any:
    """A PyArrow table shaped like the query needs, made only from public choices: ``rows``
    rows; the value column uniform within the bounds (within [1, 1000] for private bounds,
    which have none); each grouping column cycling through its declared domain (or five
    made-up cells); one row per privacy unit."""
    import pyarrow as pa

    rng = np.random.default_rng(SIMULATION_SEED)
    data: dict[str, Any] = {}
    if spec.privacy_unit is not None:
        ids = np.arange(rows, dtype=np.int64)
        data[spec.privacy_unit] = (ids if schema.get(spec.privacy_unit) == "numeric"
                                   else [f"unit-{i}" for i in ids])
    typed = _typed_domain(spec, schema) or {}
    for column in spec.groups:
        values: list[Any] = typed.get(column) or _made_up_cells(schema.get(column, "string"))
        data[column] = [values[i % len(values)] for i in range(rows)]
    if RELEASE_KINDS[spec.kind].columns == "one":  # the value column
        low, high = spec.bounds if isinstance(spec.bounds, tuple) else _MADE_UP_RANGE
        data[spec.columns[0]] = rng.uniform(low, high, rows)
    if not data:
        data["row"] = np.arange(rows, dtype=np.int64)
    return pa.table(data)


def _made_up_cells(kind: str) -> list[Any]:
    if kind == "numeric":
        return list(range(_SYNTHETIC_CELLS))
    if kind == "boolean":
        return [False, True]
    return [f"cell {chr(ord('A') + i)}" for i in range(_SYNTHETIC_CELLS)]


def simulate(spec: ReleaseSpec, schema: Mapping[str, str], rows: object) -> dict[str, Any]:
    """The release run on :func:`synthetic_table` with a seeded throwaway accountant: what
    accuracy to expect (σ, noise std, interval widths). Spends nothing from any ledger; the
    result is marked NOT private (``secure`` false).

    Raises:
        ApproxDPError: bad input (``rows`` out of range, a query the API refuses).
    """
    from approxdp.releases import PrivateTable

    n = integer("rows", rows, 1, _MAX_SIMULATED_ROWS)
    table = PrivateTable(synthetic_table(spec, schema, n), budget=(spec.epsilon, spec.delta),
                         seed=SIMULATION_SEED, **_table_options(spec))
    result = _run(table, spec, schema)
    return {"rows": n, "result": release_dict(result), "explain": result.explain()}


# -- the real release ------------------------------------------------------------------------
#: What the review says of a query without a declared domain (issue 23 §7).
PARTITION_SELECTION = (
    "none: cells are chosen by DP partition selection — a group appears only if its noisy "
    "count clears a threshold set by ε and δ, so small groups are left out (and nothing says "
    "they exist); type the domain to release every value you list, zeros included"
)


def query_rows(spec: ReleaseSpec) -> list[tuple[str, str]]:
    """The whole query, as the review shows it before the spend: statistic, columns, bounds,
    quantiles, domain (or how cells are chosen without one), privacy unit, ε, δ, level.
    Everything here is public: the form's choices, never the data."""
    entry = RELEASE_KINDS[spec.kind]
    rows: list[tuple[str, str]] = [("statistic", f"{spec.kind}: {entry.summary}")]
    if spec.columns:
        rows.append(("count over" if entry.columns == "many" else "value column",
                     ", ".join(spec.columns)))
    if spec.casts:
        rows.append(("converted to numbers", ", ".join(spec.casts)
                     + " (what is not a number becomes missing)"))
    if entry.bounds:
        if spec.bounds == "private":
            bounds = ("estimated privately first, from 20 % of this ε and δ (two spends; "
                      "refused before any spend if the data are too few)")
        elif spec.bounds is None:
            bounds = "none"
        else:
            bounds = f"[{spec.bounds[0]:g}, {spec.bounds[1]:g}] (values are clamped to them)"
        rows.append(("bounds", bounds))
    if entry.qs:
        rows.append(("quantiles", ", ".join(f"{q:g}" for q in spec.qs)))
    if spec.by:
        rows.append(("group by", ", ".join(spec.by)))
    if entry.domain and spec.groups:
        if spec.domain:
            rows.append(("domain", "; ".join(f"{c} = {', '.join(v)}"
                                             for c, v in spec.domain.items())))
            rows.append(("rows outside the domain", "drop them" if spec.outside_domain == "drop"
                         else "refuse the release"))
        else:
            rows.append(("domain", PARTITION_SELECTION))
    unit = ("each row" if spec.privacy_unit is None else
            f"{spec.privacy_unit} (at most {spec.max_partitions} cell(s), "
            f"{spec.max_rows_per_partition} row(s) per cell)")
    rows += [
        ("privacy unit", unit),
        ("neighbouring", "add or remove one unit" if spec.neighbouring == "add-remove"
         else "replace one unit"),
        ("ε", f"{spec.epsilon:g}"),
        ("δ", f"{spec.delta:g}"),
        ("confidence level", f"{spec.level:g}"),
        ("data file", spec.file.label),
    ]
    return rows


def cost_preview(spec: ReleaseSpec, ledger: Path,
                 schema: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What the release will spend, what the ledger has left, and whether it fits.

    The check plans the release's own events (those a run on synthetic data spends: they
    depend only on public parameters) against the ledger, under its filter or rule, exactly
    as the release itself will be charged.
    """
    accountant = PrivacyAccountant(ledger=ledger)
    settings = read_ledger_settings(ledger)
    try:
        events = _release_events(spec, schema_of(spec.file) if schema is None else schema)
        now = accountant.remaining()
        plan = accountant.plan(events)
    finally:
        accountant.close()
    return {"epsilon": spec.epsilon, "delta": spec.delta, "ledger": str(ledger),
            "composition": settings.composition, "now": budget_dict(now), "fits": plan.fits,
            "reason": plan.reason, "after": budget_dict(plan.status_after),
            "query": query_rows(spec)}


def _release_events(spec: ReleaseSpec, schema: Mapping[str, str]) -> list[PrivacyEvent]:
    """The events the release will spend, from a run on a small synthetic table with a
    throwaway accountant: what a release spends depends only on its public parameters (the
    query, ε, δ, bounds, domain), never on the data."""
    from approxdp.releases import PrivateTable

    probe = PrivacyAccountant(budget=(1e9, 0.5), composition="basic", adaptivity="fixed")
    table = PrivateTable(synthetic_table(spec, schema, 50), accountant=probe,
                         seed=SIMULATION_SEED, **_table_options(spec))
    _run(table, spec, schema)
    return [record.event for record in probe.history()]


def release(spec: ReleaseSpec, schema: Mapping[str, str], ledger: Path) -> dict[str, Any]:
    """Make the release from the data file with secure noise, paying through ``ledger``.

    Raises:
        BudgetExceededError: the ledger cannot pay; nothing was spent.
        DataError: the file cannot be read or the query does not fit the data.
    """
    from approxdp.releases import PrivateTable

    accountant = PrivacyAccountant(ledger=ledger)
    try:
        table = PrivateTable(str(spec.file.path), accountant=accountant, **_table_options(spec))
        result = _run(table, spec, schema)
        status = accountant.remaining()
    finally:
        accountant.close()
    return {
        "command": "release",
        "schema_version": JSON_SCHEMA_VERSION,
        "file": str(spec.file.path),
        "query": {"kind": spec.kind, "columns": list(spec.columns), "by": list(spec.by),
                  "bounds": (list(spec.bounds) if isinstance(spec.bounds, tuple)
                             else spec.bounds),
                  "domain": {c: list(v) for c, v in spec.domain.items()} or None,
                  "qs": list(spec.qs) or None, "casts": list(spec.casts) or None,
                  "cast_errors": spec.cast_errors if spec.casts else None},
        "result": release_dict(result),
        "budget": budget_dict(status),
        "ledger": str(ledger),
        "explain": result.explain(),
        "released_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def release_json(data: Mapping[str, Any]) -> str:
    """The release as JSON (``approxdp release --json``'s shape, plus ``explain``)."""
    return json.dumps(jsonable(dict(data)), indent=2, allow_nan=False) + "\n"


def release_csv(data: Mapping[str, Any]) -> str:
    """The released cells as CSV, as ``approxdp release --output FILE.csv`` writes them."""
    with tempfile.TemporaryDirectory(prefix="approxdp-serve-") as folder:
        path = Path(folder) / "release.csv"
        write_cells_csv(path, data["result"])
        return path.read_text(encoding="utf-8")


def release_script(spec: ReleaseSpec, schema: Mapping[str, str], ledger: Path | None) -> str:
    """A runnable Python script that makes the same release with the API.

    Every value is written with ``repr``, so no column name or path can break out of its
    string. Running it makes a NEW release (fresh noise) and spends the budget again.
    """
    options = _table_options(spec)
    inputs = spec.inputs(schema)
    fields = {"columns": inputs.columns, "bounds": inputs.bounds, "by": inputs.by,
              "domain": inputs.domain, "qs": inputs.qs}
    given = [f"{k}={v!r}" for k, v in fields.items() if v]
    if inputs.domain and inputs.outside_domain != "error":
        given.append(f"outside_domain={inputs.outside_domain!r}")
    call = [repr(spec.kind), f"KindInputs({', '.join(given)})", f"epsilon={spec.epsilon!r}",
            f"delta={spec.delta!r}"]
    if spec.level != 0.95:
        call.append(f"level={spec.level!r}")
    table_args = ", ".join(f"{k}={v!r}" for k, v in options.items())
    lines = [
        '"""Reproduce a release made with `approxdp serve`: ' + spec.label + ".",
        "",
        "Running this makes a NEW release with fresh noise and spends its budget again from",
        "the ledger (it is refused, spending nothing, if the ledger cannot pay).",
        '"""',
        "",
        "import approxdp as dp",
        "from approxdp.releases.kinds import KindInputs",
        "",
    ]
    if ledger is not None:
        lines += [
            f"LEDGER = {str(ledger)!r}",
            "accountant = dp.PrivacyAccountant(ledger=LEDGER)  # its stored budget, mode, rule",
        ]
    else:
        lines += [f"accountant = dp.PrivacyAccountant(budget=({spec.epsilon!r}, "
                  f"{spec.delta!r}))"]
    lines += [
        f"table = dp.PrivateTable({str(spec.file.path)!r}, accountant=accountant,",
        f"                        {table_args})",
        "try:",
        f"    result = table.release_kind({', '.join(call)})",
        "    print(result.explain())",
        "    print(accountant.remaining())",
        "finally:",
        "    accountant.close()",
        "",
    ]
    return "\n".join(lines)

