"""``ledger``: show a ledger file (read-only), and ``ledger verify``: check its hash chain,
its totals and the spend receipts of released artifacts.

``approxdp ledger FILE`` is ``approxdp ledger show FILE``. Neither command ever writes the
file, creates it, or upgrades an older schema: both work on a file the user may only read.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from approxdp.accounting import Receipt, verify_ledger
from approxdp.cli.output import (
    EXIT_LEDGER_BROKEN,
    JSON_SCHEMA_VERSION,
    emit,
    fmt,
    json_option,
    new_table,
    progress,
    safe_text,
)
from approxdp.cli.release_views import render_budget, render_rdp_share
from approxdp.errors import InvalidParameterError
from approxdp.reports.ledger import ledger_report, read_ledger
from approxdp.reports.releases import SEEDED_MARK

__all__ = ["ledger_command"]


class _DefaultShow(click.Group):
    """A group whose first argument, when it is not one of its commands, is a FILE for
    ``show`` (so ``approxdp ledger FILE`` keeps working)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["show", *args]
        return super().parse_args(ctx, args)


@click.group("ledger", cls=_DefaultShow, invoke_without_command=False)
def ledger_command() -> None:
    """Show a ledger file (FILE, or show FILE), or verify it (verify FILE); both take --json
    and only read the file.

    \b
    Examples:
      approxdp ledger budget.sqlite
      approxdp ledger verify budget.sqlite --receipt release.json
    """


@ledger_command.command("show")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@json_option
def show_command(file: Path, as_json: bool) -> None:
    """Show a ledger file's budget, which filter and mode certify it, every spend and
    committed plan, its shares, and what remains (read-only).

    A Rényi share (--rdp-share when the ledger was created) is shown order by order: each
    order's budget B, what is used, what is left, and the order with the most left; the
    share admits a request while some order stays within its budget.

    Each spend's cost is shown as the ε it spends alone, and the ε spent up to it, both at the
    budget's δ (under a privacy filter: the filter's spent ε, its odometer). A ledger written
    before privacy filters is re-certified in memory under the 'gdp' filter; if its history
    exceeds the budget under the filter, this says so (opening it to spend refuses until you
    decide). Spends of seeded simulations recorded on request are marked "seeded, not
    private". The file is only read: it may be one the user cannot write.

    Example: approxdp ledger budget.sqlite
    """
    read = read_ledger(file)
    count = len(read.records)
    with progress(f"Accounting {count} spend(s)", total=count) as advance:
        data = ledger_report(file, read, advance=advance)
    spends = data["spends"]
    commitments = data["commitments"]
    delta = data["budget"]["delta"]

    def render(console: Console) -> None:
        table = new_table(f"Spends in {safe_text(file)}")
        table.add_column("#", justify="right")
        table.add_column("time (UTC)")
        table.add_column("label")
        table.add_column("event")
        table.add_column("ε (this spend)", justify="right")
        table.add_column("ε (so far)", justify="right")
        for s in spends:
            label = safe_text(s["label"] or "")
            if s["seeded"]:
                label = f"{label} [bold red]{SEEDED_MARK}[/]"
            table.add_row(str(s["index"]), s["time"].replace("T", " ").removesuffix("+00:00"),
                          label, safe_text(s["summary"]),
                          fmt(s["epsilon_alone"], 4), fmt(s["epsilon_so_far"], 4))
        so_far = spends[0]["so_far_is"] if spends else ""
        table.caption = (f"ε at the budget's δ = {delta:g}: what each spend costs alone, and "
                         f"so far: {so_far}" if spends else "no spends yet")
        console.print(table)
        if commitments:
            plans = new_table("Committed plans")
            for col in ("#", "label", "pricing", "spent", "state"):
                plans.add_column(col)
            for c in commitments:
                plans.add_row(str(c["id"]), safe_text(c["label"]), c["pricing"],
                              f"{c['spent']} of {c['planned_count']}", c["state"])
            console.print(plans)
        of = data["sub_budget_of"]
        title = "Budget" if of is None else (
            f"Budget of sub-budget {safe_text(of['name'])!r} of ledger {of['ledger_id']} (its "
            "(ε, δ) is part of that ledger's budget)")
        render_budget(console, data["status"], title=title)
        if data["status"]["rdp_share"] is not None:
            render_rdp_share(console, data["status"]["rdp_share"])
        for name, sub in data["status"]["sub_budgets"].items():
            where = "" if sub["file"] is None else f" in {safe_text(sub['file'])}"
            render_budget(console, {**sub["status"], "rdp_share": sub["rdp_share"]},
                          title=f"Sub-budget {safe_text(name)!r}{where}")

    emit(data, as_json, render)


def _receipts(specs: Sequence[str]) -> list[Receipt]:
    """Receipts from ``--receipt`` values: LEDGER_ID:INDEX:HASH texts, or release artifacts —
    JSON (every ``receipts`` list in it), CSV (its ``receipt`` column) or Parquet (its
    ``approxdp.receipts`` metadata)."""
    out: list[Receipt] = []
    for spec in specs:
        path = Path(spec)
        if not path.is_file():
            out.append(Receipt.from_obj(spec))
            continue
        try:
            found = [Receipt.from_obj(r) for r in _artifact_receipts(path)]
        except (OSError, ValueError) as exc:
            raise InvalidParameterError(
                f"--receipt {spec!r}: not a readable release artifact ({exc})"
            ) from exc
        if not found:
            raise InvalidParameterError(f"--receipt {spec!r}: the file holds no receipts")
        out.extend(dict.fromkeys(found))  # a CSV repeats its receipt on every row
    return out


def _artifact_receipts(path: Path) -> list[Any]:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with open(path, newline="", encoding="utf-8") as fh:
            texts = {row.get("receipt") or "" for row in csv.DictReader(fh)}
        return [r for text in sorted(texts) for r in text.split(";") if r]
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        meta = pq.read_schema(path).metadata or {}
        raw = meta.get(b"approxdp.receipts")
        return [] if raw is None else list(json.loads(raw))
    return list(_find_receipts(json.loads(path.read_text(encoding="utf-8"))))


def _find_receipts(data: Any) -> Iterator[Any]:
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "receipts" and isinstance(value, list):
                yield from value
            else:
                yield from _find_receipts(value)
    elif isinstance(data, list):
        for value in data:
            yield from _find_receipts(value)


def _verification_json(found: dict[str, Any]) -> dict[str, Any]:
    """A :meth:`~approxdp.accounting.LedgerVerification.to_dict` for the command's JSON: the
    file's schema version as ``ledger_schema_version`` (in each sub-budget's object too), so
    that it never stands in for the JSON's own ``schema_version``."""
    out = {("ledger_schema_version" if key == "schema_version" else key): value
           for key, value in found.items()}
    out["sub_budgets"] = [_verification_json(sub) for sub in found.get("sub_budgets", ())]
    return out


@ledger_command.command("verify")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--receipt", "receipt_specs", multiple=True, metavar="RECEIPT",
              help="A spend receipt to check: a release's artifact (.json, .csv or .parquet: "
                   "every receipt in it) or LEDGER_ID:INDEX:HASH. Repeatable.")
@json_option
def verify_command(file: Path, receipt_specs: tuple[str, ...], as_json: bool) -> int:
    """Check a ledger file: its totals, its hash chain, and spend receipts (read-only).

    Exit status 0 when everything checks out, 5 when the ledger or a receipt does not (a row
    or the totals were edited, or a spend a receipt names is gone or different). A ledger with
    sub-budgets (--sub-budget) is checked with every sub-budget's file: each one's chain,
    totals and identity, and that it is the file the ledger recorded (a missing, moved or
    foreign file is a problem). A rewrite
    that recomputes the whole chain is caught only by receipts kept elsewhere: keep the
    artifacts (their "receipts") of what you released.

    Example: approxdp ledger verify budget.sqlite --receipt release.json
    """
    receipts = _receipts(receipt_specs)
    report = verify_ledger(file, receipts)
    data = {"command": "ledger verify", "schema_version": JSON_SCHEMA_VERSION,
            **_verification_json(report.to_dict())}

    def render(console: Console) -> None:
        head = (f"{safe_text(file)}: {report.spends} spend(s), schema {report.schema_version}"
                f", {report.receipts} receipt(s) checked")
        if report.ok:
            chain = ("hash chain intact" if report.chained else
                     "no hash chain (written before schema 4; open it once for writing, e.g. "
                     "with a release, to chain it)")
            console.print(f"[green]OK[/] {head}; totals match the spends; {chain}")
            for sub in getattr(report, "sub_budgets", ()):
                console.print(f"  [green]OK[/] sub-budget file {safe_text(sub.path)}: "
                              f"{sub.spends} spend(s), schema {sub.schema_version}")
            for note in report.notes:
                console.print(f"  [dim]note: {safe_text(note)}[/]")
            if not report.receipts:
                console.print("[dim]without receipts, a rewrite that recomputes the whole "
                              "chain cannot be told apart; pass --receipt ARTIFACT.json[/]")
            return
        console.print(f"[bold red]NOT OK[/] {head}")
        for problem in report.problems:
            console.print(f"  - {safe_text(problem)}")
        for note in report.notes:
            console.print(f"  [dim]note: {safe_text(note)}[/]")

    emit(data, as_json, render)
    return 0 if report.ok else EXIT_LEDGER_BROKEN  # the group's exit status
