"""The release wizard's form: the query it describes, read and checked without the data.

Steps 1 and 2 of :mod:`~approxdp.web.wizard_steps`: :func:`schema_of` (the columns of a data
file: names and kinds only) and :func:`read_spec` (the privacy unit, query, bounds and budget
typed into the form, checked with the API's typed errors) into a :class:`ReleaseSpec`; and how a
spec runs on a :class:`~approxdp.releases.PrivateTable` (:func:`table_options`,
:func:`run_query`), real or synthetic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from approxdp.errors import DataError, InvalidParameterError
from approxdp.releases.kinds import DEFAULT_QS, RELEASE_KINDS, KindInputs
from approxdp.releases.specs import CAST_ERRORS
from approxdp.reports.releases import parse_domain, typed_value
from approxdp.web.config import DataFile, ServeConfig, data_file
from approxdp.web.forms import integer, on_field, parameter

__all__ = [
    "KINDS",
    "ReleaseSpec",
    "read_spec",
    "run_query",
    "schema_of",
    "table_options",
    "typed_domain",
]

#: The statistics the wizard offers: every kind of the registry.
KINDS = tuple(RELEASE_KINDS)


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
    ``ledger_sub``: the ledger's sub-budget that pays (None: the ledger itself).
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
    bins: int | None = None
    branching: int | None = None
    ledger_sub: str | None = None

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
                          domain=typed_domain(self, schema),
                          outside_domain="drop" if self.outside_domain == "drop" else "error",
                          qs=self.qs, bins=self.bins, branching=self.branching)


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
    ``neighbouring``, ``qs``, ``bins``, ``branching`` (a quantile tree's shape; empty: the
    default), ``casts``, ``cast_errors``, ``ledger_sub`` (the sub-budget that pays; empty:
    the ledger itself). Errors are tagged with their field
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
    bins, branching = _tree_shape(form) if entry.tree else (None, None)
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
        cast_errors=cast_errors, bins=bins, branching=branching,
        ledger_sub=_ledger_sub(config, form.get("ledger_sub")),
    )


def _ledger_sub(config: ServeConfig, value: object) -> str | None:
    """The sub-budget the form chose to pay from (empty: the ledger itself), one of the
    ledger's own (fixed when it was created)."""
    if value is None or value == "":
        return None
    if value not in config.sub_budgets:
        raise InvalidParameterError(
            f"ledger_sub must be one of the ledger's sub-budgets {list(config.sub_budgets)} "
            f"(or empty: the ledger itself), got {str(value)[:60]!r}"
        )
    return str(value)


def _tree_shape(form: Mapping[str, object]) -> tuple[int | None, int | None]:
    """A quantile tree's ``bins`` and ``branching`` as typed (empty: the default shape),
    checked by the registry's own rule (``bins`` a power of ``branching``)."""
    given: dict[str, int | None] = {}
    for name in ("bins", "branching"):
        text = str(form.get(name) or "").strip()
        with on_field(name):
            given[name] = integer(name, text, 2) if text else None
    with on_field("bins" if given["bins"] is not None else "branching"):
        KindInputs(bins=given["bins"], branching=given["branching"]).tree()
    return given["bins"], given["branching"]


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


def typed_domain(spec: ReleaseSpec, schema: Mapping[str, str]) -> dict[str, list[Any]] | None:
    if not spec.domain:
        return None
    return {c: _typed_values(c, v, schema) for c, v in spec.domain.items()}


def table_options(spec: ReleaseSpec) -> dict[str, Any]:
    options: dict[str, Any] = {
        "privacy_unit": spec.privacy_unit, "max_partitions": spec.max_partitions,
        "max_rows_per_partition": spec.max_rows_per_partition,
        "neighbouring": spec.neighbouring}
    if spec.casts:
        options["casts"] = {c: "double" for c in spec.casts}
        if spec.cast_errors != "drop":
            options["cast_errors"] = spec.cast_errors
    return options


def run_query(table: Any, spec: ReleaseSpec, schema: Mapping[str, str]) -> Any:
    """The query on a PrivateTable (real or synthetic), through the registry of kinds."""
    return table.release_kind(spec.kind, spec.inputs(schema), epsilon=spec.epsilon,
                              delta=spec.delta, level=spec.level)
