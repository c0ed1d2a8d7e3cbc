"""Release results and budget statuses as JSON objects and Rich tables (``release``, ``demo``).

Everything is rendered from the JSON objects, so what ``--json`` prints and what the tables
show cannot drift apart.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from approxdp.accounting import BudgetStatus, SpendRecord
from approxdp.accounting.ledger import event_to_json
from approxdp.cli.output import fmt, fmt_value, jsonable, new_table
from approxdp.releases.result import ReleaseResult

__all__ = [
    "budget_dict",
    "event_summary",
    "release_dict",
    "render_budget",
    "render_release",
    "spend_dict",
    "write_cells_csv",
]


def _key_value(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def release_dict(result: ReleaseResult) -> dict[str, Any]:
    """One :class:`~approxdp.releases.result.ReleaseResult` as a JSON object.

    Shape: ``label, kind, key_columns, cells[{key{column: value}, value, std, ci_low,
    ci_high}], level, mechanism, method, sigma, sensitivity{l2, l1, linf, derivation},
    effective_sensitivity, epsilon, delta, threshold, rows{...}, comparisons[{method, sigma,
    private, ratio_to_used}], extra{name: [...]}, notes[...]``.
    """
    columns = list(result.columns)
    values = result.values.tolist()
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
        })
    return {
        "label": result.label,
        "kind": result.kind,
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
    event = json.loads(event_to_json(record.event))
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


def render_release(console: Console, release: dict[str, Any], show: int = 20) -> None:
    """Draw a :func:`release_dict`: the released values, then how they were made."""
    cells = release["cells"]
    level = f"{release['level']:.0%}"
    table = new_table(f"{release['label']} — private {release['kind']}")
    key_columns = release["key_columns"] or []
    for column in key_columns:
        table.add_column(column)
    table.add_column("value", justify="right", style="bold")
    table.add_column(f"{level} CI", justify="right")
    table.add_column("noise std", justify="right")
    shown = cells if show <= 0 else cells[:show]
    for cell in shown:
        keys = ["NULL" if v is None else str(v) for v in cell["key"].values()]
        if not key_columns:
            keys = []
        table.add_row(*keys, fmt_value(cell["value"]),
                      f"[{fmt_value(cell['ci_low'], 5)}, {fmt_value(cell['ci_high'], 5)}]",
                      fmt_value(cell["std"], 4))
    if len(shown) < len(cells):
        table.caption = (f"{len(cells) - len(shown)} more cells not shown (--show 0 shows all; "
                         "--output or --json has them all)")
    console.print(table)
    sens = release["sensitivity"]
    details = Table.grid(padding=(0, 2))
    details.add_column(style="dim")
    details.add_column()
    details.add_row("mechanism", f"{release['mechanism']}, calibration '{release['method']}', "
                    f"σ = {fmt(release['sigma'])} on the scaled vector")
    details.add_row("sensitivity", f"Δ2 = {fmt(sens['l2'])}: {sens['derivation']}")
    details.add_row("budget spent", f"ε = {release['epsilon']:g}, δ = {release['delta']:g}")
    if release["threshold"] is not None:
        details.add_row("cells", f"chosen by DP partition selection: noisy count > "
                        f"{fmt(release['threshold'])}; {len(cells)} released")
    rows = ", ".join(f"{k} = {v}" for k, v in release["rows"].items())
    details.add_row("rows", f"{rows} (exact, NOT private — for the data owner only)")
    for note in release["notes"]:
        details.add_row("note", note)
    console.print(details)
    comparisons = [c for c in release["comparisons"]
                   if c["sigma"] is not None and not math.isnan(c["sigma"])]
    if comparisons:
        cmp = new_table("σ other calibrations would need for the same release")
        cmp.add_column("method")
        cmp.add_column("σ", justify="right")
        cmp.add_column("× used", justify="right")
        cmp.add_column("(ε, δ)-DP?", justify="center")
        for c in comparisons:
            cmp.add_row(c["method"], fmt(c["sigma"]), f"{c['ratio_to_used']:.3f}",
                        "[green]yes[/]" if c["private"] else "[bold red]NO[/]")
        console.print(cmp)


def render_budget(console: Console, budget: dict[str, Any], title: str = "Budget") -> None:
    """Draw a :func:`budget_dict`."""
    table = new_table(title)
    table.add_column("")
    table.add_column("ε", justify="right")
    table.add_column("δ", justify="right")
    table.add_row("total budget", fmt(budget["budget_epsilon"]), fmt(budget["budget_delta"]))
    table.add_row("spent (ε at the full δ, δ at the full ε)", fmt(budget["spent_epsilon"]),
                  fmt(budget["spent_delta"]))
    table.add_row("remaining", fmt(budget["remaining_epsilon"]), fmt(budget["remaining_delta"]),
                  style="bold")
    table.caption = f"{budget['count']} spend(s); composition: {budget['rule']}"
    console.print(table)


def write_cells_csv(path: Path, release: dict[str, Any]) -> None:
    """Write a :func:`release_dict`'s cells as CSV: key columns, value, std, ci_low, ci_high."""
    columns = list(release["key_columns"]) or []
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([*columns, "value", "std", "ci_low", "ci_high"])
        for cell in release["cells"]:
            keys = [cell["key"].get(c) for c in columns]
            writer.writerow([*("" if k is None else k for k in keys),
                             *(jsonable(cell[f]) for f in ("value", "std", "ci_low", "ci_high"))])
