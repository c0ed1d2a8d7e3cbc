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
from approxdp.accounting.serialization import event_to_obj
from approxdp.cli.output import fmt, fmt_values, jsonable, new_table, safe_text
from approxdp.releases.result import ReleaseResult

__all__ = [
    "SEEDED_MARK",
    "budget_dict",
    "diagnostics_lines",
    "event_summary",
    "receipt_text",
    "release_dict",
    "render_budget",
    "render_release",
    "spend_dict",
    "write_cells_csv",
    "write_release",
]


#: How a spend of a seeded simulation is marked wherever a ledger is shown.
SEEDED_MARK = "seeded, not private"


def release_dict(result: ReleaseResult, *, exact_diagnostics: bool = False) -> dict[str, Any]:
    """One :class:`~approxdp.releases.result.ReleaseResult` as a JSON object: its private-only
    view :meth:`~approxdp.releases.result.ReleaseResult.to_dict` (released values and public
    parameters; the exact ``diagnostics`` only with ``exact_diagnostics``). ``secure`` is
    false for a seeded simulation (NOT private); ``informative`` is false for a mean's cell
    whose noisy count's interval reaches 0 (value: midpoint or bound, interval: the whole
    bounds)."""
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


def render_release(
    console: Console, release: dict[str, Any], show: int = 20, *, budget_line: bool = True,
) -> None:
    """Draw a :func:`release_dict`: the released values, then how they were made.

    ``budget_line``: show the (ε, δ) spent; a batch shows its plan's budget once instead.
    Every string that is not the program's own (labels, keys, notes, column names) goes
    through :func:`~approxdp.cli.output.safe_text`: no markup, no control characters.
    """
    cells = release["cells"]
    level = f"{release['level']:.0%}"
    secure = release.get("secure", True)
    label = safe_text(release["label"])
    title = (f"{label} — private {release['kind']}" if secure else
             f"{label} — {release['kind']}: SEEDED SIMULATION, NOT private")
    table = new_table(title)
    if not secure:
        table.title_style = "bold red"
    key_columns = release["key_columns"] or []
    for column in key_columns:
        table.add_column(safe_text(column))
    table.add_column("value", justify="right", style="bold")
    table.add_column(f"{level} CI", justify="right")
    table.add_column("noise std", justify="right")
    shown = cells if show <= 0 else cells[:show]
    # one format per column (value and CI share theirs: same units)
    numbers = fmt_values([x for c in shown for x in (c["value"], c["ci_low"], c["ci_high"])])
    stds = fmt_values([c["std"] for c in shown], 4)
    for i, cell in enumerate(shown):
        keys = ["NULL" if v is None else safe_text(v) for v in cell["key"].values()]
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
    details.add_row("sensitivity", f"Δ2 = {fmt(sens['l2'])}: {safe_text(sens['derivation'])}")
    if release["mechanism"] == "exact":
        details.add_row("budget spent", "nothing: this value needs no noise (its sensitivity "
                        "is 0), so it is exact and costs no budget")
    elif budget_line:
        details.add_row("budget spent", f"ε = {release['epsilon']:g}, δ = {release['delta']:g}")
    if release["threshold"] is not None:
        details.add_row("cells", f"chosen by DP partition selection: noisy count > "
                        f"{fmt(release['threshold'])}; {len(cells)} released")
    for note in release["notes"]:
        details.add_row("note", safe_text(note))
    for receipt in release.get("receipts", []):
        details.add_row("receipt", f"spend {receipt['index']} of ledger {receipt['ledger_id']} "
                        f"(chain hash {receipt['chain_hash'][:16]}…): 'approxdp ledger verify "
                        "LEDGER --receipt FILE.json' checks it")
    diagnostics = release.get("diagnostics")
    if diagnostics is not None:
        for line in diagnostics_lines(diagnostics):
            details.add_row("[bold yellow]exact[/]", f"{safe_text(line)} "
                            f"[bold yellow]({diagnostics['label']})[/]")
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


def diagnostics_lines(diagnostics: dict[str, Any]) -> list[str]:
    """The lines of a release's ``diagnostics`` object (exact, NOT private)."""
    lines = []
    if diagnostics.get("rows"):
        lines.append("rows: " + ", ".join(f"{k} = {v}" for k, v in diagnostics["rows"].items()))
    lines += [f"cast of {column!r}: {c['count']} value(s) were not numbers (e.g. "
              f"{c['examples']}) and count as missing"
              for column, c in diagnostics.get("casts", {}).items()]
    lines += list(diagnostics.get("notes", []))
    return lines


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
    """Write a release's artifact at ``path`` by its suffix: ``.json`` the command's JSON
    object ``data`` (with the exact diagnostics only if ``data`` has them), ``.csv`` its cells
    (:func:`write_cells_csv`), ``.parquet`` :meth:`~approxdp.releases.result.ReleaseResult.
    to_arrow` (whose schema metadata says whether it is private and holds its receipts)."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        write_cells_csv(path, data["result"])
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(result.to_arrow(), path)
    else:
        path.write_text(json.dumps(jsonable(data), indent=2, allow_nan=False) + "\n",
                        encoding="utf-8")
