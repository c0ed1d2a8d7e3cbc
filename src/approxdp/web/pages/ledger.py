"""The Ledger page: a read-only view of the ledger fixed at start (the report of ``approxdp
ledger``: budget, rule, its shares — a basic share, a Rényi share order by order, sub-budgets —
every spend, what remains), with its burn-down, refreshed when the file changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from htmltools import TagChild
from shiny import reactive, render, req, ui

from approxdp.reports.ledger import burn_down, ledger_report, read_ledger
from approxdp.web import figures
from approxdp.web.config import ServeConfig
from approxdp.web.forms import Outcome, attempt
from approxdp.web.widgets import (
    budget_table,
    error_box,
    rdp_share_table,
    sub_budgets_table,
    table,
)

__all__ = ["BURN_DOWN_MAX_SPENDS", "ledger_stamp", "ledger_view", "panel", "server"]

#: The burn-down chart replays at most this many spends (the table lists them all).
BURN_DOWN_MAX_SPENDS = 2000


def ledger_view(path: Path) -> dict[str, Any]:
    """``approxdp ledger``'s report (budget, which filter and mode certify it, every spend,
    what remains), plus the burn-down: the ε and δ spent after each spend, by replaying the
    ledger's decisions in order on an in-memory accountant with the same budget, mode and rule
    (:func:`~approxdp.reports.ledger.burn_down`)."""
    read = read_ledger(path)
    return {**ledger_report(path, read, epsilons=False),
            "burn_down": burn_down(read, BURN_DOWN_MAX_SPENDS)}


def ledger_stamp(path: Path) -> tuple[int, ...]:
    """Changes whenever the ledger (or its SQLite WAL) is written."""
    out: list[int] = []
    for p in (path, path.with_name(path.name + "-wal")):
        try:
            st = p.stat()
            out += [st.st_mtime_ns, st.st_size]
        except OSError:
            out += [0, 0]
    return tuple(out)


def panel(config: ServeConfig) -> Any:
    """The page's layout: the status, the burn-down and the spends (or how to give a ledger)."""
    if config.ledger is None:
        body: list[TagChild] = [ui.p(
            "No ledger: start the server with ", ui.tags.code("approxdp serve --ledger FILE"),
            " (and ", ui.tags.code("--budget EPSILON DELTA"), " for a new one) to see it here.")]
    else:
        body = [
            ui.p("Read-only view of ", ui.tags.code(str(config.ledger)),
                 " (fixed when the server started; it refreshes when the file changes)."),
            ui.output_ui("ledger_summary"),
            ui.layout_columns(
                ui.card(ui.card_header("Burn-down"), ui.output_plot("ledger_burn",
                                                                    height="340px")),
                ui.card(ui.card_header("Spends"), ui.output_ui("ledger_spends")),
                col_widths=(6, 6),
            ),
        ]
    return ui.nav_panel("Ledger", *body, value="ledger")


def server(ledger_path: Path) -> None:
    """The page's outputs for the ledger at ``ledger_path``."""
    @reactive.poll(lambda: ledger_stamp(ledger_path), 1.0)
    def ledger() -> Outcome:
        return attempt(lambda: ledger_view(ledger_path), {})

    @render.ui
    def ledger_summary() -> TagChild:
        result = ledger()
        if not result.ok:
            return error_box(result, "ledger_error")
        view = result.value
        status = view["status"]
        mode = ("a privacy filter, fully adaptive" if view["adaptivity"] == "full" else
                "fixed: a declared sequence, as its owner promised")
        parts: list[TagChild] = [
            ui.p(f"Budget (ε, δ) = ({view['budget']['epsilon']:g}, "
                 f"{view['budget']['delta']:g}); filter or rule: {view['composition']} "
                 f"({mode}); ",
                 ui.tags.b(f"{status['count']} spend(s)", id="ledger_count"), "."),
            ui.p(ui.tags.b("Certified by: "), status.get("certified_by") or status["rule"],
                 id="ledger_certified"),
            budget_table(status, "ledger_status"),
            ui.p(ui.tags.small("Spent figures: ", status.get("spent_meaning") or ""),
                 id="ledger_spent_meaning"),
        ]
        if status.get("basic_share") is not None:
            parts.append(ui.p(f"Basic share (ε, δ) = {tuple(status['basic_share'])}, used "
                              f"{tuple(status['basic_share_used'])}.", id="ledger_basic_share"))
        if status.get("rdp_share") is not None:
            parts.append(rdp_share_table(status["rdp_share"], "ledger_rdp_share"))
        if status.get("sub_budgets"):
            parts.append(sub_budgets_table(status["sub_budgets"], "ledger_sub_budgets"))
        if status.get("refusing"):
            parts.insert(0, ui.div(ui.tags.b("Refusing spends: "), status["refusing"],
                                   class_="approxdp-error", id="ledger_refusing"))
        return ui.div(*parts)

    @render.ui
    def ledger_spends() -> TagChild:
        result = ledger()
        req(result.ok)
        spends = result.value["spends"]
        if not spends:
            return ui.p("No spends yet.")
        return table(["#", "time (UTC)", "label", "event", "δ after (at total ε)"], [
            (str(s["index"]), [str(s["index"]), s["time"], str(s["label"] or ""),
                               s["summary"], f"{s['delta_after']:.4g}"])
            for s in spends], "ledger_table")

    @render.plot(alt="burn-down of the ledger's budget")
    def ledger_burn() -> Any:
        result = ledger()
        req(result.ok)
        return figures.burn_down_figure(result.value)
