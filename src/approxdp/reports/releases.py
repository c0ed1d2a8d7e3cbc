"""Release results, budgets and ledger spends as JSON objects; cells as CSV; domain values.

The objects are what ``approxdp release --json`` prints and what the browser shows and
downloads (:mod:`approxdp.web`); the command line draws its tables from them too.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from approxdp.accounting import BudgetStatus, SpendRecord
from approxdp.accounting.serialization import event_to_obj
from approxdp.errors import InvalidParameterError
from approxdp.releases.result import ReleaseResult
from approxdp.reports.formatting import jsonable

__all__ = [
    "SEEDED_MARK",
    "budget_dict",
    "event_summary",
    "parse_domain",
    "receipt_text",
    "release_dict",
    "spend_dict",
    "typed_value",
    "write_cells_csv",
    "write_release",
]


#: How a spend of a seeded simulation is marked wherever a ledger is shown.
SEEDED_MARK = "seeded, not private"


def release_dict(result: ReleaseResult, *, exact_diagnostics: bool = False) -> dict[str, Any]:
    """One :class:`~approxdp.releases.result.ReleaseResult` as a JSON object: its private-only
    view :meth:`~approxdp.releases.result.ReleaseResult.to_dict` (released values, public
    parameters and the spend's receipts; the exact ``diagnostics`` only with
    ``exact_diagnostics``). ``secure`` is false for a seeded simulation (NOT private);
    ``informative`` is false for a mean's cell whose noisy count's interval reaches 0 (value:
    midpoint or bound, interval: the whole bounds)."""
    return result.to_dict(exact_diagnostics=exact_diagnostics)


def budget_dict(status: BudgetStatus) -> dict[str, Any]:
    """A :class:`~approxdp.accounting.BudgetStatus` as a JSON object (its fields)."""
    return dataclasses.asdict(status)


def event_summary(obj: dict[str, Any]) -> str:
    """A short text for a serialised event, e.g. ``Gaussian(sigma=8.35, sensitivity=1)``."""
    name = str(obj.get("type", "event")).removesuffix("Event")
    if "events" in obj:
        inner = ", ".join(event_summary(e) for e in obj["events"])
        return f"{name}[{inner}]"
    if "event" in obj:
        rest = ", ".join(f"{k}={v:.4g}" for k, v in obj.items()
                         if isinstance(v, float) and k != "label")
        return f"{name}({event_summary(obj['event'])}, {rest})"
    fields = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in obj.items() if k not in ("type", "label"))
    return f"{name}({fields})"


def spend_dict(record: SpendRecord) -> dict[str, Any]:
    """One ledger spend as a JSON object: ``index, timestamp, time, label, event, summary,
    rule, delta_after, seeded, receipt``. ``seeded`` is true for a seeded simulation's spend
    (NOT private) recorded on request; ``receipt`` is the spend's ``{ledger_id, index,
    chain_hash}`` in a chained ledger file (else null)."""
    event = event_to_obj(record.event)
    when = dt.datetime.fromtimestamp(record.timestamp, tz=dt.UTC)
    receipt = record.receipt
    return {
        "index": record.index,
        "timestamp": record.timestamp,
        "time": when.isoformat(timespec="seconds"),
        "label": event.get("label"),
        "event": event,
        "summary": event_summary(event),
        "rule": record.rule,
        "delta_after": record.delta_after,
        "seeded": record.seeded,
        "receipt": None if receipt is None else receipt.to_dict(),
    }


def receipt_text(release: dict[str, Any]) -> str:
    """A release's receipts as text, ``LEDGER_ID:INDEX:HASH`` joined by ``;`` ("" for none)."""
    return ";".join(f"{r['ledger_id']}:{r['index']}:{r['chain_hash']}"
                    for r in release.get("receipts", []))


def write_cells_csv(path: Path, release: dict[str, Any]) -> None:
    """Write a :func:`release_dict`'s cells as CSV: key columns, value, std, ci_low, ci_high,
    informative, secure (``false`` on every row of a seeded simulation, so the file itself
    says it is NOT private), and ``receipt`` (the spend receipt(s), where the release spent
    from a ledger file). A missing key is written ``NULL``, as ``--domain`` spells it (an
    empty field would be the empty string). Never the exact diagnostics."""
    columns = list(release["key_columns"]) or []
    secure = "true" if release.get("secure", True) else "false"
    receipt = receipt_text(release)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([*columns, "value", "std", "ci_low", "ci_high", "informative",
                         "secure", *(["receipt"] if receipt else [])])
        for cell in release["cells"]:
            keys = [cell["key"].get(c) for c in columns]
            writer.writerow([*("NULL" if k is None else k for k in keys),
                             *(jsonable(cell[f]) for f in ("value", "std", "ci_low", "ci_high")),
                             "true" if cell.get("informative", True) else "false", secure,
                             *([receipt] if receipt else [])])


def write_release(path: Path, data: dict[str, Any], result: ReleaseResult) -> None:
    """Write a release's artifact at ``path`` by its suffix: ``.json`` the JSON object ``data``
    (with the exact diagnostics only if ``data`` has them), ``.csv`` its cells
    (:func:`write_cells_csv` of ``data["result"]``), ``.parquet``
    :meth:`~approxdp.releases.result.ReleaseResult.to_arrow` (whose schema metadata says
    whether it is private and holds its receipts). Never anything exact unless ``data`` was
    made with ``exact_diagnostics``."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        write_cells_csv(path, data["result"])
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(result.to_arrow(), path)
    else:
        path.write_text(json.dumps(jsonable(data), indent=2, allow_nan=False) + "\n",
                        encoding="utf-8")


def parse_domain(specs: Sequence[str]) -> dict[str, list[str]]:
    """``COLUMN=V1,V2,...`` lines as {column: [raw value, ...]} (typed later by
    :func:`typed_value`, once the column's kind is known). The values are one CSV record: a
    value that holds a comma is written in double quotes (``city="Washington, DC",Boston``),
    a double quote inside one doubled, as in CSV files.
    """
    domain: dict[str, list[str]] = {}
    for spec in specs:
        column, sep, values = spec.partition("=")
        if not sep or not column or not values:
            raise InvalidParameterError(
                f"--domain must look like COLUMN=VALUE1,VALUE2,..., got {spec!r}"
            )
        if column in domain:
            raise InvalidParameterError(f"--domain gives column {column!r} twice")
        try:
            (parsed,) = csv.reader([values], strict=True)
        except (csv.Error, ValueError) as exc:
            raise InvalidParameterError(
                f"--domain {spec!r}: its values must be one CSV record (a value with a comma "
                f"in double quotes: {column}=\"A, B\",C): {exc}"
            ) from exc
        domain[column] = parsed
    return domain


def typed_value(column: str, raw: str, kind: str, what: str = "--domain value") -> Any:
    """A domain value typed like its column (``kind``: ``numeric``, ``boolean``, ...): ``NULL``
    → None, numbers for numeric columns, true/false for boolean ones, else the text.

    Raises:
        InvalidParameterError: not a number for a numeric column, not true/false for a boolean
            one (the message starts with ``what``).
    """
    if raw == "NULL":
        return None
    if kind == "numeric":
        try:
            return int(raw)
        except ValueError:
            try:
                return float(raw)
            except ValueError:
                raise InvalidParameterError(
                    f"{what} {raw!r} for numeric column {column!r} is not a number"
                ) from None
    if kind == "boolean":
        if raw.lower() not in ("true", "false"):
            raise InvalidParameterError(
                f"{what} {raw!r} for boolean column {column!r} must be true or false"
            )
        return raw.lower() == "true"
    return raw
