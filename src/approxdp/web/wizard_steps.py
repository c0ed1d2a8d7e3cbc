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

The form, the simulation and the review live in :mod:`~approxdp.web.wizard_spec`,
:mod:`~approxdp.web.wizard_simulation` and :mod:`~approxdp.web.wizard_review` (their names are
importable from here too); this module makes the release and its downloads.
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from approxdp.accounting import PrivacyAccountant
from approxdp.reports.formatting import JSON_SCHEMA_VERSION, jsonable
from approxdp.reports.ledger import accountant_budget
from approxdp.reports.releases import release_dict, write_cells_csv
from approxdp.web.wizard_review import PARTITION_SELECTION, cost_preview, query_rows
from approxdp.web.wizard_simulation import SIMULATION_SEED, simulate, synthetic_table
from approxdp.web.wizard_spec import (
    KINDS,
    ReleaseSpec,
    read_spec,
    run_query,
    schema_of,
    table_options,
)

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


def release(spec: ReleaseSpec, schema: Mapping[str, str], ledger: Path) -> dict[str, Any]:
    """Make the release from the data file with secure noise, paying through ``ledger``.

    Raises:
        BudgetExceededError: the ledger cannot pay; nothing was spent.
        DataError: the file cannot be read or the query does not fit the data.
    """
    from approxdp.releases import PrivateTable

    accountant = PrivacyAccountant(ledger=ledger)
    try:
        pays = accountant if spec.ledger_sub is None else accountant.sub(spec.ledger_sub)
        table = PrivateTable(str(spec.file.path), accountant=pays, **table_options(spec))
        result = run_query(table, spec, schema)
        status = accountant_budget(pays)
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
                  "qs": list(spec.qs) or None, "bins": spec.bins, "branching": spec.branching,
                  "casts": list(spec.casts) or None,
                  "cast_errors": spec.cast_errors if spec.casts else None},
        "result": release_dict(result),
        "budget": status,
        "ledger": str(ledger),
        "ledger_sub": spec.ledger_sub,
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
    options = table_options(spec)
    inputs = spec.inputs(schema)
    fields = {"columns": inputs.columns, "bounds": inputs.bounds, "by": inputs.by,
              "domain": inputs.domain, "qs": inputs.qs, "bins": inputs.bins,
              "branching": inputs.branching}
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
        if spec.ledger_sub is not None:
            lines += [f"pays = accountant.sub({spec.ledger_sub!r})  # its sub-budget"]
    else:
        lines += [f"accountant = dp.PrivacyAccountant(budget=({spec.epsilon!r}, "
                  f"{spec.delta!r}))"]
    payer = "pays" if ledger is not None and spec.ledger_sub is not None else "accountant"
    lines += [
        f"table = dp.PrivateTable({str(spec.file.path)!r}, accountant={payer},",
        f"                        {table_args})",
        "try:",
        f"    result = table.release_kind({', '.join(call)})",
        "    print(result.explain())",
        f"    print({payer}.remaining())",
        "finally:",
        "    accountant.close()",
        "",
    ]
    return "\n".join(lines)
