"""Release results and budget statuses as Rich tables (``release``, ``demo``).

Everything is drawn from the JSON objects of :mod:`approxdp.reports.releases`, so what
``--json`` prints and what the tables show cannot drift apart.
"""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table

from approxdp.cli.output import new_table, safe_text
from approxdp.reports.formatting import fmt, fmt_values

__all__ = ["diagnostics_lines", "rdp_share_line", "render_budget", "render_rdp_share",
           "render_release", "render_shares"]


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
    lines = [f"{budget['count']} spend(s); rule: {safe_text(str(budget['rule']))}"]
    if budget.get("certified_by"):
        lines.append(f"certified by: {safe_text(budget['certified_by'])}")
    if budget.get("spent_meaning"):
        lines.append(f"spent: {safe_text(budget['spent_meaning'])}")
    if budget.get("room") is not None:
        lines.append(f"Gaussian-DP room: μ² = {fmt(budget['room_used'])} used of "
                     f"{fmt(budget['room'])}")
    if budget.get("basic_share") is not None:
        lines.append(f"basic share (ε, δ): {tuple(budget['basic_share'])}, used "
                     f"{tuple(budget['basic_share_used'])}")
    share = budget.get("rdp_share")
    if share is not None:
        lines.append(rdp_share_line(share))
    for name, sub in (budget.get("sub_budgets") or {}).items():
        status = sub["status"]
        lines.append(f"sub-budget {safe_text(name)!r}: (ε, δ) = ({fmt(sub['budget']['epsilon'])}"
                     f", {fmt(sub['budget']['delta'])}), {status['count']} spend(s), "
                     f"remaining ε = {fmt(status['remaining_epsilon'])} at its full δ")
    if budget.get("open_commitments"):
        lines.append(f"{budget['open_commitments']} committed plan(s) open")
    if budget.get("refusing"):
        lines.append(f"[bold red]REFUSING SPENDS:[/] {safe_text(budget['refusing'])}")
    table.caption = "\n".join(lines)
    console.print(table)


def rdp_share_line(share: dict[str, Any]) -> str:
    """One line for a :func:`~approxdp.reports.ledger.rdp_share_dict`: the share, its orders,
    and what is used at its best order."""
    state = "" if share["alive"] else " [bold red](every order used up: it admits nothing more)[/]"
    return (f"Rényi share (ε, δ) = ({fmt(share['epsilon'])}, {fmt(share['delta'])}) at "
            f"{len(share['orders'])} order(s) {', '.join(f'{a:g}' for a in share['orders'])}: "
            f"ρ = {fmt(share['best_used'])} used of {fmt(share['best_budget'])} at "
            f"α = {share['best_order']:g} (its order with the most left){state}")


def render_rdp_share(console: Console, share: dict[str, Any]) -> None:
    """Draw a Rényi share order by order: α, its budget B_j, what is used, what is left."""
    table = new_table(f"Rényi share (ε, δ) = ({fmt(share['epsilon'])}, {fmt(share['delta'])})"
                      ": a Rényi filter at orders fixed when the ledger was created")
    table.add_column("order α", justify="right")
    table.add_column("budget B", justify="right")
    table.add_column("used Σρ", justify="right")
    table.add_column("left", justify="right")
    for a, b, u in zip(share["orders"], share["budgets"], share["used"], strict=True):
        best = a == share["best_order"]
        table.add_row(f"{a:g}" + (" ←" if best else ""), fmt(b),
                      fmt(u if u < 1e300 else math.inf),
                      "none (B ≤ 0)" if b <= 0 else fmt(b - u) if u <= b else "[red]used up[/]",
                      style="bold" if best else None)
    table.caption = (f"each order converts to (ε, δ/k) = ({fmt(share['epsilon'])}, "
                     f"{fmt(share['delta_per_order'])}) (Canonne et al. 2020, Prop. 12); a "
                     "request is admitted while some order stays within its budget; ← the "
                     "order with the most left")
    console.print(table)


def render_shares(console: Console, results: list[dict[str, Any]], epsilon: float,
                  delta: float) -> None:
    """Draw each query's share of a batch's one plan (``share`` of its results)."""
    table = new_table(f"One plan, one spend of ε = {epsilon:g}, δ = {delta:g}: each query's "
                      "share")
    table.add_column("query")
    table.add_column("share", justify="right")
    table.add_column("σ (scaled vector)", justify="right")
    for result in results:
        table.add_row(safe_text(result["label"]), f"{result['share']:.1%}", fmt(result["sigma"]))
    table.caption = ("share w/W of the plan's Gaussian noise budget (1/σ*², Zhao et al. Lemma "
                     "15): the queries are calibrated jointly, so the shares add up to the "
                     "whole (ε, δ)")
    console.print(table)
