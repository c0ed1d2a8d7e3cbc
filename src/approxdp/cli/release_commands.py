"""``release``: a private statistic of a file, of any kind of the registry
:data:`~approxdp.releases.kinds.RELEASE_KINDS` (``approxdp ledger`` is in
:mod:`approxdp.cli.ledger_commands`).

``release`` reads a CSV or Parquet file with DuckDB
(:class:`~approxdp.releases.session.PrivateTable`), charges an accountant — in memory, or a
SQLite ledger file shared by every release on the same people — and prints the report. A
release the budget cannot pay for is refused before any noise is drawn (exit status 3) and
the ledger is left unchanged.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import Any, Literal, cast

import click
from rich.console import Console

from approxdp.accounting import COMPOSITION_RULES
from approxdp.accounting.registry import ADAPTIVITY_MODES
from approxdp.calibration import CALIBRATION_METHODS
from approxdp.cli.ledger_settings import (
    LedgerOptions,
    ledger_options,
    make_accountant,
    payer,
)
from approxdp.cli.output import (
    JSON_SCHEMA_VERSION,
    Number,
    emit,
    interruptible,
    json_option,
    progress,
    safe_text,
)
from approxdp.cli.release_inputs import BoundsOption, cli_problem, parse_casts
from approxdp.cli.release_views import render_budget, render_release
from approxdp.cli.row_options import parse_derives, row_options, transform_rows
from approxdp.errors import DataError, InvalidParameterError, ParameterTypeError
from approxdp.releases.kinds import RELEASE_KINDS, KindInputs
from approxdp.releases.quantiles import MAX_BINS
from approxdp.releases.specs import Neighbouring, OutsideDomain
from approxdp.reports.ledger import accountant_budget
from approxdp.reports.releases import (
    parse_domain,
    release_dict,
    typed_value,
    write_release,
)

__all__ = ["release_command"]

_OUTPUT_SUFFIXES = (".json", ".csv", ".parquet")


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


def _typed_domain(table: Any, domain: dict[str, list[str]]) -> dict[str, list[Any]] | None:
    """``--domain`` values typed like their columns (the table's schema)."""
    if not domain:
        return None
    schema = table.engine.schema(table.table)
    for column in domain:
        if column not in schema:
            raise DataError(f"--domain column {column!r} not found; the table has columns "
                            f"{list(schema)}")
    return {c: [typed_value(c, v, schema[c].value) for v in vals] for c, vals in domain.items()}


#: The kinds that clamp to bounds, as the --bounds help lists them (from the registry).
_CLAMPED = ", ".join(k.name for k in RELEASE_KINDS.values() if k.bounds)
#: The kinds read from a quantile tree, whose shape --bins/--branching set (from the registry).
_TREE = ", ".join(k.name for k in RELEASE_KINDS.values() if k.tree)


@click.command("release")
@click.argument("kind", type=click.Choice((*RELEASE_KINDS, "batch")))
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("columns", nargs=-1)
@click.option("-e", "--epsilon", type=Number.of("epsilon_positive"),
              metavar="FLOAT", default=None,
              help="ε this release spends (required; a batch may take it from its spec).")
@click.option("-d", "--delta", type=Number.of("delta"), metavar="FLOAT",
              default=None,
              help="δ this release spends (required; a batch may take it from its spec).")
@click.option("--bounds", cls=BoundsOption, default=None,
              help=f"Clamping bounds of the value column ({_CLAMPED}), or 'private': "
                   "estimated first from --bounds-share of the budget (a release of its own: "
                   "two spends).")
@click.option("--bounds-share", type=Number.of("probability"),
              metavar="FLOAT", default=None,
              help="With --bounds private: the share of -e/-d spent on the bounds (default 0.2).")
@click.option("--by", multiple=True, metavar="COLUMN", help="Group a sum or mean (repeatable).")
@click.option("--q", "qs", multiple=True, type=Number.of("quantile"), metavar="FLOAT",
              help="A quantile to release (quantiles; repeatable; default 0.25, 0.5, 0.75).")
@click.option("--bins", type=int, metavar="INT", default=None,
              help=f"Leaves of the quantile tree ({_TREE}; default 1024): a power of "
                   f"--branching, at most {MAX_BINS}. A release whose intervals are not "
                   "informative names a better shape in its notes.")
@click.option("--branching", type=int, metavar="INT", default=None,
              help=f"Branching of the quantile tree ({_TREE}; default 32).")
@click.option("--domain", "domain_specs", multiple=True, metavar="COLUMN=V1,V2,...",
              help="Public values of a grouping column (repeatable; NULL for missing). "
                   "Without a domain, cells are chosen by DP partition selection.")
@click.option("--outside-domain", type=click.Choice(["error", "drop"]), default="error",
              show_default=True, help="What to do with rows outside the declared domain.")
@click.option("--budget", type=(Number.of("epsilon"), Number.of("delta_cost")),
              default=None, metavar="EPSILON DELTA",
              help="Total budget: needed to create a new --ledger; an existing ledger keeps "
                   "the budget stored in it (leave --budget out, or give the same one: a "
                   "different one is refused). Without --ledger: the budget of this session "
                   "(default: the release's own ε, δ).")
@click.option("--ledger", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="SQLite ledger file that keeps the budget across runs (created if absent).")
@click.option("--composition", type=click.Choice(list(COMPOSITION_RULES)), default=None,
              help="Rule of the accountant (default: the 'gdp' privacy filter, or the "
                   "ledger's; an existing ledger's rule cannot change). Rules that are not "
                   "filters need --adaptivity fixed.")
@click.option("--adaptivity", type=click.Choice(list(ADAPTIVITY_MODES)), default=None,
              help="full (default): spends may be chosen after earlier outputs, the ledger is "
                   "a privacy filter. fixed: you promise every spend's parameters were fixed "
                   "before any noise was drawn.")
@ledger_options
@click.option("--privacy-unit", default=None, metavar="COLUMN",
              help="Column identifying whom to protect (default: each row).")
@click.option("--max-partitions", type=int, default=1, show_default=True,
              help="Cells one unit may contribute to (needs --privacy-unit).")
@click.option("--max-rows-per-partition", type=int, default=1, show_default=True,
              help="Rows one unit may contribute per cell (needs --privacy-unit).")
@click.option("--neighbouring", type=click.Choice(["add-remove", "replace-one"]),
              default="add-remove", show_default=True, help="Neighbouring relation.")
@click.option("--level", type=Number.of("level"), metavar="FLOAT",
              default=0.95, show_default=True,
              help="Confidence level of the intervals.")
@click.option("--method", type=click.Choice(list(CALIBRATION_METHODS)), default="optimal",
              show_default=True, help="Gaussian calibration method.")
@click.option("--cast", "cast_specs", multiple=True, metavar="COLUMN=double",
              help="Convert a value column to numbers before anything else; values that are "
                   "not numbers become missing (counted, with examples, in the result notes). "
                   "Repeatable.")
@click.option("--cast-errors", type=click.Choice(["drop", "error"]), default="drop",
              show_default=True,
              help="With --cast: values that are not numbers become missing (drop), or refuse "
                   "the release before anything is spent (error).")
@row_options
@click.option("--engine", type=click.Choice(["duckdb", "spark"]), default=None,
              help="What reads FILE and computes: duckdb (default; a batch: the spec's "
                   "engine, else duckdb), or spark (a local session unless one is active; "
                   "needs approxdp[spark]).")
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
    delta: float | None, bounds: tuple[float, float] | Literal["private"] | None,
    bounds_share: float | None, by: tuple[str, ...], qs: tuple[float, ...],
    bins: int | None, branching: int | None, domain_specs: tuple[str, ...],
    outside_domain: str, budget: tuple[float, float] | None, ledger: Path | None,
    composition: str | None, adaptivity: str | None,
    shares: LedgerOptions, privacy_unit: str | None,
    max_partitions: int,
    max_rows_per_partition: int, neighbouring: str, level: float, method: str,
    cast_specs: tuple[str, ...], cast_errors: str, wheres: tuple[str, ...],
    derive_specs: tuple[str, ...], engine: str | None, seed: int | None,
    allow_seeded_ledger: bool, output: Path | None, exact_diagnostics: bool, show: int,
    as_json: bool,
) -> None:
    """A private statistic of a CSV or Parquet FILE.

    \b
    KIND is a kind of the registry (the choices above; bounds: private clamping bounds);
    COLUMNS are the value column of the kinds that take one, or the columns to count over
    (histogram). FILE may be a Parquet folder or a glob. KIND batch
    releases the queries of a TOML/JSON spec FILE as one jointly calibrated plan
    (docs/cli.md). Examples:
      approxdp release count people.csv -e 0.5 -d 1e-6
      approxdp release mean people.parquet age --bounds 17 90 -e 0.5 -d 1e-6
      approxdp release histogram people.csv sex --domain sex=F,M -e 1 -d 1e-6 \\
          --ledger budget.sqlite --budget 4 1e-5 --output sex.csv
      approxdp release quantiles people.csv age --bounds 0 100 --q 0.1 --q 0.9 -e 1 -d 1e-6
      approxdp release median people.csv income --bounds private -e 1 -d 1e-6
      approxdp release mean people.csv hours --bounds 0 100 \\
          --where "sex = 'F' AND age > 30" -e 0.5 -d 1e-6
      approxdp release batch spec.toml --ledger budget.sqlite
    """
    from approxdp.releases.session import PrivateTable

    if kind == "batch":
        from approxdp.cli.batch_command import run_batch

        if columns:
            raise InvalidParameterError("release batch takes one spec FILE and no COLUMNS")
        if wheres or derive_specs:
            raise InvalidParameterError(
                "release batch takes its filters and derived columns from the spec (keys "
                "where and derive), not from --where/--derive")
        if bins is not None or branching is not None:
            raise InvalidParameterError(
                "release batch takes a quantile tree's shape from its spec (keys bins and "
                "branching of a median or quantiles query), not from --bins/--branching")
        run_batch(file, epsilon=epsilon, delta=delta, level=level if level != 0.95 else None,
                  budget=budget, ledger=ledger, composition=composition, seed=seed,
                  allow_seeded_ledger=allow_seeded_ledger, output=output, show=show,
                  as_json=as_json, exact_diagnostics=exact_diagnostics,
                  make_accountant=functools.partial(make_accountant, options=shares),
                  ledger_sub=shares.ledger_sub,
                  engine=engine)
        return
    for name, value in (("-e' / '--epsilon", epsilon), ("-d' / '--delta", delta)):
        if value is None:
            raise click.UsageError(f"Missing option '{name}'.")
    assert epsilon is not None and delta is not None
    entry = RELEASE_KINDS[kind]
    domain = parse_domain(domain_specs)  # raw values: typed once the columns are known
    inputs = KindInputs(columns=columns, bounds=bounds, by=by, domain=domain or None, qs=qs,
                        outside_domain=cast(OutsideDomain, outside_domain), bins=bins,
                        branching=branching)
    problem = entry.problem(inputs)
    if problem is not None:
        raise cli_problem(problem, columns)
    if entry.tree:  # a bad --bins/--branching is refused before anything is spent
        try:
            inputs.tree()
        except (InvalidParameterError, ParameterTypeError) as exc:
            raise type(exc)(f"--bins/--branching: {exc}") from None
    if bounds_share is not None and bounds != "private":
        raise InvalidParameterError("--bounds-share goes with --bounds private")
    _check_output(output)
    casts = parse_casts(cast_specs)
    derives = parse_derives(derive_specs)
    accountant = make_accountant(ledger, budget, composition, (epsilon, delta), shares)
    try:
        pays = payer(accountant, shares)
        with progress(f"Releasing a private {kind} from {file.name}"), \
                interruptible(lambda: pays.remaining().count):
            table = PrivateTable(
                str(file), accountant=pays, neighbouring=cast(Neighbouring, neighbouring),
                privacy_unit=privacy_unit, max_partitions=max_partitions,
                max_rows_per_partition=max_rows_per_partition, seed=seed, method=method,
                casts=casts, cast_errors=cast(Literal["drop", "error"], cast_errors),
                engine=engine or "duckdb", allow_seeded_ledger=allow_seeded_ledger,
            )
            table = transform_rows(table, derive=derives, where=wheres)
            inputs = dataclasses.replace(inputs, domain=_typed_domain(table, domain))
            result = table.release_kind(entry, inputs, epsilon=epsilon, delta=delta,
                                        level=level, bounds_share=bounds_share)
        status = accountant_budget(pays)
    finally:
        accountant.close()
    data: dict[str, Any] = {
        "command": "release",
        "schema_version": JSON_SCHEMA_VERSION,
        "file": str(file),
        "query": {"kind": kind, "columns": list(columns), "by": list(by),
                  "bounds": list(bounds) if isinstance(bounds, tuple) else bounds,
                  "domain": domain or None, "derive": dict(derives), "where": list(wheres),
                  **({"bins": inputs.tree().bins, "branching": inputs.tree().branching}
                     if entry.tree else {})},
        "result": release_dict(result, exact_diagnostics=exact_diagnostics),
        "budget": status,
        "ledger": str(ledger) if ledger is not None else None,
        "ledger_sub": shares.ledger_sub,
    }

    def render(console: Console) -> None:
        render_release(console, data["result"], show)
        where = f" in ledger {safe_text(ledger)}" if ledger else " (this session)"
        if shares.ledger_sub is not None:
            where = f" of sub-budget {safe_text(shares.ledger_sub)!r}" + where
        render_budget(console, data["budget"], title="Budget" + where)

    emit(data, as_json, render)
    if output is not None:
        write_release(output, data, result)

