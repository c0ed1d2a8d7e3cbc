"""Release results, budgets and ledger spends as JSON objects; cells as CSV; domain values.

The objects are what ``approxdp release --json`` prints and what the browser shows and
downloads (:mod:`approxdp.web`); the command line draws its tables from them too.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from approxdp.accounting import BudgetStatus, SpendRecord
from approxdp.accounting.serialization import event_to_obj
from approxdp.errors import InvalidParameterError
from approxdp.releases.result import ReleaseResult
from approxdp.reports.formatting import jsonable

__all__ = [
    "budget_dict",
    "event_summary",
    "parse_domain",
    "release_dict",
    "spend_dict",
    "typed_value",
    "write_cells_csv",
]


def _key_value(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def release_dict(result: ReleaseResult) -> dict[str, Any]:
    """One :class:`~approxdp.releases.result.ReleaseResult` as a JSON object.

    Shape: ``label, kind, secure, key_columns, cells[{key{column: value}, value, std, ci_low,
    ci_high, informative}], level, mechanism, method, sigma, sensitivity{l2, l1, linf,
    derivation}, effective_sensitivity, epsilon, delta, threshold, rows{...},
    comparisons[{method, sigma, private, ratio_to_used}], extra{name: [...]}, notes[...]``.
    ``secure`` is false for a seeded simulation (NOT private); ``informative`` is false for a
    mean's cell whose noisy count's interval reaches 0 (value: midpoint or bound, interval:
    the whole bounds).
    """
    columns = list(result.columns)
    values = result.values.tolist()
    informative = (result.informative.tolist() if result.informative is not None
                   else [True] * len(values))
    cells = []
    for i, value in enumerate(values):
        if len(result.keys) == len(values):
            key = {c: _key_value(v) for c, v in zip(columns, result.keys[i], strict=True)}
        else:  # a vector of linear queries released for one global cell
            key = {"index": i}
        cells.append({
            "key": key,
            "value": value,
            "std": float(result.std[i]),
            "ci_low": float(result.ci_low[i]),
            "ci_high": float(result.ci_high[i]),
            "informative": bool(informative[i]),
        })
    return {
        "label": result.label,
        "kind": result.kind,
        "secure": result.secure,
        "key_columns": columns,
        "cells": cells,
        "level": result.level,
        "mechanism": result.mechanism,
        "method": result.method,
        "sigma": result.sigma,
        "sensitivity": dataclasses.asdict(result.sensitivity),
        "effective_sensitivity": result.effective_sensitivity,
        "epsilon": result.epsilon,
        "delta": result.delta,
        "threshold": result.threshold,
        "rows": dict(result.rows),
        "comparisons": [dataclasses.asdict(c) for c in result.comparisons],
        "extra": {k: v.tolist() for k, v in result.extra.items()},
        "notes": list(result.notes),
    }


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
    rule, delta_after``."""
    event = event_to_obj(record.event)
    when = dt.datetime.fromtimestamp(record.timestamp, tz=dt.UTC)
    return {
        "index": record.index,
        "timestamp": record.timestamp,
        "time": when.isoformat(timespec="seconds"),
        "label": event.get("label"),
        "event": event,
        "summary": event_summary(event),
        "rule": record.rule,
        "delta_after": record.delta_after,
    }


def write_cells_csv(path: Path, release: dict[str, Any]) -> None:
    """Write a :func:`release_dict`'s cells as CSV: key columns, value, std, ci_low, ci_high,
    informative, secure (``false`` on every row of a seeded simulation, so the file itself
    says it is NOT private). A missing key is written ``NULL``, as ``--domain`` spells it (an
    empty field would be the empty string)."""
    columns = list(release["key_columns"]) or []
    secure = "true" if release.get("secure", True) else "false"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([*columns, "value", "std", "ci_low", "ci_high", "informative",
                         "secure"])
        for cell in release["cells"]:
            keys = [cell["key"].get(c) for c in columns]
            writer.writerow([*("NULL" if k is None else k for k in keys),
                             *(jsonable(cell[f]) for f in ("value", "std", "ci_low", "ci_high")),
                             "true" if cell.get("informative", True) else "false", secure])


def parse_domain(specs: Sequence[str]) -> dict[str, list[str]]:
    """``COLUMN=V1,V2,...`` lines as {column: [raw value, ...]} (typed later by
    :func:`typed_value`, once the column's kind is known)."""
    domain: dict[str, list[str]] = {}
    for spec in specs:
        column, sep, values = spec.partition("=")
        if not sep or not column or not values:
            raise InvalidParameterError(
                f"--domain must look like COLUMN=VALUE1,VALUE2,..., got {spec!r}"
            )
        if column in domain:
            raise InvalidParameterError(f"--domain gives column {column!r} twice")
        domain[column] = values.split(",")
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
