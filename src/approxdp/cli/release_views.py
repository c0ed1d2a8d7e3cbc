"""Release results and budget statuses as JSON objects and Rich tables (``release``, ``demo``).

Everything is rendered from the JSON objects, so what ``--json`` prints and what the tables
show cannot drift apart.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import math
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from approxdp.accounting import BudgetStatus, SpendRecord
from approxdp.accounting.serialization import event_to_obj
from approxdp.cli.output import fmt, fmt_values, jsonable, new_table
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


def render_release(console: Console, release: dict[str, Any], show: int = 20) -> None:
    """Draw a :func:`release_dict`: the released values, then how they were made."""
    cells = release["cells"]
    level = f"{release['level']:.0%}"
    secure = release.get("secure", True)
    title = (f"{release['label']} — private {release['kind']}" if secure else
             f"{release['label']} — {release['kind']}: SEEDED SIMULATION, NOT private")
    table = new_table(title)
    if not secure:
        table.title_style = "bold red"
    key_columns = release["key_columns"] or []
    for column in key_columns:
        table.add_column(column)
    table.add_column("value", justify="right", style="bold")
    table.add_column(f"{level} CI", justify="right")
    table.add_column("noise std", justify="right")
    shown = cells if show <= 0 else cells[:show]
    # one format per column (value and CI share theirs: same units)
    numbers = fmt_values([x for c in shown for x in (c["value"], c["ci_low"], c["ci_high"])])
    stds = fmt_values([c["std"] for c in shown], 4)
    for i, cell in enumerate(shown):
        keys = ["NULL" if v is None else escape(str(v)) for v in cell["key"].values()]
        if not key_columns:
            keys = []
        value, low, high = numbers[3 * i: 3 * i + 3]
        if not cell.get("informative", True):
            value = f"[dim]{value} †[/]"
        table.add_row(*keys, value, f"[{low}, {high}]", stds[i])
    captions = []
    if len(shown) < len(cells):
        captions.append(f"{len(cells) - len(shown)} more cells not shown (--show 0 shows all; "
                        "--output or --json has them all)")
    if any(not c.get("informative", True) for c in shown):
        captions.append("† no information: the noisy count's interval reaches 0 (an empty or "
                        "tiny cell), so the value is the bounds' midpoint or a bound and its "
                        "interval the whole of the bounds")
    if not secure:
        captions.append("[bold red]seeded simulation: the noise is reproducible from --seed; "
                        "NOT private, do not publish[/]")
    if captions:
        table.caption = "\n".join(captions)
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
