"""``release``: a private count, sum, mean, histogram, ... from a file.

``release`` reads a CSV or Parquet file with DuckDB
(:class:`~approxdp.releases.session.PrivateTable`), charges an accountant — in memory, or a
SQLite ledger file shared by every release on the same people — and prints the report. A
release the budget cannot pay for is refused before any noise is drawn (exit status 3) and
the ledger is left unchanged.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import click
from rich.console import Console

from approxdp.accounting import COMPOSITION_RULES, PrivacyAccountant, read_ledger_settings
from approxdp.calibration import CALIBRATION_METHODS
from approxdp.cli.output import (
    JSON_SCHEMA_VERSION,
    Number,
    emit,
    interruptible,
    json_option,
    progress,
    safe_text,
)
from approxdp.cli.release_views import render_budget, render_release
from approxdp.errors import DataCheckError, DataError, InvalidParameterError
from approxdp.releases.specs import Neighbouring
from approxdp.reports.releases import (
    budget_dict,
    parse_domain,
    release_dict,
    typed_value,
    write_release,
)

__all__ = ["parse_casts", "release_command"]

KINDS = ("count", "sum", "mean", "histogram")
#: One numeric column with --bounds, released on its own (no --by or --domain).
COLUMN_KINDS = ("median", "quantiles", "variance", "std")
_FINITE = Number(-math.inf, math.inf, min_open=True, max_open=True)
_OUTPUT_SUFFIXES = (".json", ".csv", ".parquet")


def parse_casts(specs: Sequence[str]) -> dict[str, str]:
    """``COLUMN=double`` options as {column: type}."""
    casts: dict[str, str] = {}
    for spec in specs:
        column, sep, kind = spec.partition("=")
        if not sep or not column or kind.lower() != "double":
            raise InvalidParameterError(
                f"--cast must look like COLUMN=double (the only conversion), got {spec!r}"
            )
        casts[column] = "double"
    return casts


def _check_shape(
    kind: str, columns: Sequence[str], bounds: tuple[float, float] | None, by: Sequence[str],
) -> None:
    if kind in COLUMN_KINDS:
        if len(columns) != 1 or bounds is None or by:
            raise InvalidParameterError(
                f"{kind} needs exactly one value COLUMN and --bounds LOW HIGH (values are "
                "clamped to them), and takes no --by"
            )
    elif kind == "count":
        if columns or by or bounds is not None:
            raise InvalidParameterError(
                "count takes no COLUMNS, --by or --bounds; for counts per group use "
                "'approxdp release histogram FILE COLUMN...'"
            )
    elif kind in ("sum", "mean"):
        if len(columns) != 1:
            raise InvalidParameterError(
                f"{kind} needs exactly one value COLUMN, got {len(columns)}: {list(columns)}; "
                "group with --by"
            )
        if bounds is None:
            raise InvalidParameterError(
                f"{kind} needs --bounds LOW HIGH: values are clamped to them, and privacy "
                "parameters never come from the data"
            )
    else:
        if not columns:
            raise InvalidParameterError("histogram needs at least one COLUMN to count over")
        if by or bounds is not None:
            raise InvalidParameterError("histogram takes no --by or --bounds (list COLUMNS)")


def _accountant(
    ledger: Path | None, budget: tuple[float, float] | None, composition: str | None,
    release_budget: tuple[float, float],
) -> PrivacyAccountant:
    if ledger is None:
        return PrivacyAccountant(budget or release_budget, composition=composition or "auto")
    if ledger.exists() and not ledger.is_dir():
        settings = read_ledger_settings(ledger)
        if budget is not None and tuple(map(float, budget)) != settings.budget:
            raise InvalidParameterError(
                f"--budget {budget[0]:g} {budget[1]:g} differs from the budget "
                f"({settings.budget[0]:g}, {settings.budget[1]:g}) stored in ledger "
                f"{str(ledger)!r}; a ledger's budget never changes: leave out --budget to use "
                "the stored one (or start a new ledger file)"
            )
        if composition is not None and composition != settings.composition:
            raise InvalidParameterError(
                f"--composition {composition} differs from the rule {settings.composition!r} "
                f"stored in ledger {str(ledger)!r}; leave out --composition to use it"
            )
        return PrivacyAccountant(settings.budget, ledger=ledger,
                                 composition=settings.composition)
    if budget is None:
        raise InvalidParameterError(
            f"ledger {str(ledger)!r} does not exist yet; create it by also giving its total "
            "budget: --budget EPSILON DELTA"
        )
    return PrivacyAccountant(budget, ledger=ledger, composition=composition or "auto")


def _check_output(output: Path | None) -> None:
    """Refuse an unusable --output BEFORE anything is spent."""
    if output is None:
        return
    if not output.name.lower().endswith(_OUTPUT_SUFFIXES):
        raise InvalidParameterError(
            f"--output must end in .json, .csv or .parquet, got {str(output)!r}"
        )
    parent = output.parent if str(output.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise InvalidParameterError(
            f"--output {str(output)!r}: directory {str(parent)!r} does not exist or is not "
            "writable"
        )


def _run_release(table: Any, kind: str, columns: Sequence[str], options: dict[str, Any]) -> Any:
    """Build the query against the loaded table (typing domain values by column) and run it."""
    domain = options.pop("domain") if kind not in COLUMN_KINDS else None
    if domain:
        schema = table.engine.schema(table.table)
        for column in domain:
            if column not in schema:
                raise DataError(f"--domain column {column!r} not found; the table has columns "
                                f"{list(schema)}")
        options["domain"] = {c: [typed_value(c, v, schema[c].value) for v in vals]
                             for c, vals in domain.items()}
    if kind in COLUMN_KINDS:
        if options.pop("domain", None):
            raise InvalidParameterError(f"{kind} takes no --domain")
        for name in ("outside_domain", "by"):
            options.pop(name, None)
        bounds, qs = options.pop("bounds"), options.pop("qs")
        if kind == "quantiles":
            return table.quantiles(columns[0], qs or [0.25, 0.5, 0.75], bounds, **options)
        return getattr(table, kind)(columns[0], bounds, **options)
    if kind == "count":
        options.pop("outside_domain")
        return table.count(**options)
    if kind == "histogram":
        return table.histogram(list(columns), **options)
    bounds = options.pop("bounds")
    return getattr(table, kind)(columns[0], bounds, **options)


@click.command("release")
@click.argument("kind", type=click.Choice((*KINDS, *COLUMN_KINDS, "batch")))
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("columns", nargs=-1)
@click.option("-e", "--epsilon", type=Number(0, math.inf, min_open=True, max_open=True),
              metavar="FLOAT", default=None,
              help="ε this release spends (required; a batch may take it from its spec).")
@click.option("-d", "--delta", type=Number(0, 1, min_open=True, max_open=True), metavar="FLOAT",
              default=None,
              help="δ this release spends (required; a batch may take it from its spec).")
@click.option("--bounds", type=(_FINITE, _FINITE), default=None, metavar="LOW HIGH",
              help="Clamping bounds of the value column (sum, mean).")
@click.option("--by", multiple=True, metavar="COLUMN", help="Group a sum or mean (repeatable).")
@click.option("--q", "qs", multiple=True, type=Number(0, 1), metavar="FLOAT",
              help="A quantile to release (quantiles; repeatable; default 0.25, 0.5, 0.75).")
@click.option("--domain", "domain_specs", multiple=True, metavar="COLUMN=V1,V2,...",
              help="Public values of a grouping column (repeatable; NULL for missing). "
                   "Without a domain, cells are chosen by DP partition selection.")
@click.option("--outside-domain", type=click.Choice(["error", "drop"]), default="error",
              show_default=True, help="What to do with rows outside the declared domain.")
@click.option("--budget", type=(Number(0, math.inf, max_open=True), Number(0, 1, max_open=True)),
              default=None, metavar="EPSILON DELTA",
              help="Total budget: needed to create a new --ledger; an existing ledger keeps "
                   "the budget stored in it (leave --budget out, or give the same one: a "
                   "different one is refused). Without --ledger: the budget of this session "
                   "(default: the release's own ε, δ).")
@click.option("--ledger", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="SQLite ledger file that keeps the budget across runs (created if absent).")
@click.option("--composition", type=click.Choice(list(COMPOSITION_RULES)), default=None,
              help="Composition rule of the accountant (default: auto, or the ledger's; an "
                   "existing ledger's rule cannot change).")
@click.option("--privacy-unit", default=None, metavar="COLUMN",
              help="Column identifying whom to protect (default: each row).")
@click.option("--max-partitions", type=int, default=1, show_default=True,
              help="Cells one unit may contribute to (needs --privacy-unit).")
@click.option("--max-rows-per-partition", type=int, default=1, show_default=True,
              help="Rows one unit may contribute per cell (needs --privacy-unit).")
@click.option("--neighbouring", type=click.Choice(["add-remove", "replace-one"]),
              default="add-remove", show_default=True, help="Neighbouring relation.")
@click.option("--level", type=Number(0, 1, min_open=True, max_open=True), metavar="FLOAT",
              default=0.95, show_default=True,
              help="Confidence level of the intervals.")
@click.option("--method", type=click.Choice(list(CALIBRATION_METHODS)), default="optimal",
              show_default=True, help="Gaussian calibration method.")
@click.option("--cast", "cast_specs", multiple=True, metavar="COLUMN=double",
              help="Convert a value column to numbers before anything else; values that are "
                   "not numbers become missing (counted, with examples, in the result notes). "
                   "Repeatable.")
@click.option("--seed", type=int, default=None,
              help="Seed the noise (tests and demos only: seeded noise is NOT secure). Refused "
                   "with --ledger unless --allow-seeded-ledger.")
@click.option("--allow-seeded-ledger", is_flag=True,
              help="With --seed and --ledger: record the seeded release's spend anyway, marked "
                   "'seeded, not private' in the ledger.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Also write the result: .json (the --json object), .csv or .parquet (one row "
                   "per cell). Private values and public parameters only.")
@click.option("--exact-diagnostics", is_flag=True,
              help="Also show, and put in --json and .json output, the data holder's exact "
                   "diagnostics (rows read and used, values a --cast could not convert): "
                   "exact, NOT private — never publish what this writes.")
@click.option("--show", type=int, default=20, show_default=True,
              help="Cells shown in the table (0: all).")
@json_option
def release_command(
    kind: str, file: Path, columns: tuple[str, ...], epsilon: float | None,
    delta: float | None,
    bounds: tuple[float, float] | None, by: tuple[str, ...], qs: tuple[float, ...],
    domain_specs: tuple[str, ...],
    outside_domain: str, budget: tuple[float, float] | None, ledger: Path | None,
    composition: str | None, privacy_unit: str | None, max_partitions: int,
    max_rows_per_partition: int, neighbouring: str, level: float, method: str,
    cast_specs: tuple[str, ...], seed: int | None, allow_seeded_ledger: bool,
    output: Path | None, exact_diagnostics: bool, show: int, as_json: bool,
) -> None:
    """A private count, sum, mean or histogram of a CSV or Parquet FILE.

    \b
    KIND is count, sum, mean, histogram, median, quantiles, variance or std; COLUMNS are the
    value column (sum, mean and the last four) or the columns to count over (histogram). FILE
    may be a Parquet folder or a glob. KIND batch releases the queries of a TOML/JSON spec
    FILE as one jointly calibrated plan (docs/cli.md). Examples:
      approxdp release count people.csv -e 0.5 -d 1e-6
      approxdp release mean people.parquet age --bounds 17 90 -e 0.5 -d 1e-6
      approxdp release histogram people.csv sex --domain sex=F,M -e 1 -d 1e-6 \\
          --ledger budget.sqlite --budget 4 1e-5 --output sex.csv
      approxdp release quantiles people.csv age --bounds 0 100 --q 0.1 --q 0.9 -e 1 -d 1e-6
      approxdp release batch spec.toml --ledger budget.sqlite
    """
    import duckdb

    from approxdp.releases.session import PrivateTable

    if kind == "batch":
        from approxdp.cli.batch_command import run_batch

        if columns:
            raise InvalidParameterError("release batch takes one spec FILE and no COLUMNS")
        run_batch(file, epsilon=epsilon, delta=delta, level=level if level != 0.95 else None,
                  budget=budget, ledger=ledger, composition=composition, seed=seed,
                  allow_seeded_ledger=allow_seeded_ledger, output=output, show=show,
                  as_json=as_json, exact_diagnostics=exact_diagnostics,
                  make_accountant=_accountant)
        return
    for name, value in (("-e' / '--epsilon", epsilon), ("-d' / '--delta", delta)):
        if value is None:
            raise click.UsageError(f"Missing option '{name}'.")
    assert epsilon is not None and delta is not None
    _check_shape(kind, columns, bounds, by)
    _check_output(output)
    domain = parse_domain(domain_specs)
    casts = parse_casts(cast_specs)
    options: dict[str, Any] = {"epsilon": epsilon, "delta": delta, "level": level,
                               "domain": domain, "outside_domain": outside_domain}
    if kind in ("sum", "mean"):
        options.update(bounds=bounds, by=list(by))
    if kind in COLUMN_KINDS:
        options.update(bounds=bounds, qs=list(qs))
    elif qs:
        raise InvalidParameterError("--q is for quantiles only")
    accountant = _accountant(ledger, budget, composition, (epsilon, delta))
    try:
        with progress(f"Releasing a private {kind} from {file.name}"), \
                interruptible(lambda: accountant.remaining().count):
            table = PrivateTable(
                str(file), accountant=accountant, neighbouring=cast(Neighbouring, neighbouring),
                privacy_unit=privacy_unit, max_partitions=max_partitions,
                max_rows_per_partition=max_rows_per_partition, seed=seed, method=method,
                casts=casts, allow_seeded_ledger=allow_seeded_ledger,
            )
            result = _run_release(table, kind, columns, options)
        status = accountant.remaining()
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataCheckError(f"cannot read {str(file)!r}: {first}",
                             advice=f"cannot read {str(file)!r}: check its format and values",
                             ) from exc
    finally:
        accountant.close()
    data: dict[str, Any] = {
        "command": "release",
        "schema_version": JSON_SCHEMA_VERSION,
        "file": str(file),
        "query": {"kind": kind, "columns": list(columns), "by": list(by),
                  "bounds": list(bounds) if bounds is not None else None,
                  "domain": domain or None},
        "result": release_dict(result, exact_diagnostics=exact_diagnostics),
        "budget": budget_dict(status),
        "ledger": str(ledger) if ledger is not None else None,
    }

    def render(console: Console) -> None:
        render_release(console, data["result"], show)
        where = f" in ledger {safe_text(ledger)}" if ledger else " (this session)"
        render_budget(console, data["budget"], title="Budget" + where)

    emit(data, as_json, render)
    if output is not None:
        write_release(output, data, result)
