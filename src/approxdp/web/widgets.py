"""The pages' shared Shiny pieces: the style sheet, tables, text fields with their one-line
error under them, and how an :class:`~approxdp.web.forms.Outcome` is shown."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from htmltools import Tag, TagChild
from shiny import Outputs, render, ui

from approxdp.reports.formatting import fmt, fmt_values
from approxdp.web.forms import Outcome

__all__ = [
    "CSS",
    "budget_table",
    "cells_table",
    "error_box",
    "field_errors",
    "left",
    "table",
    "text_field",
    "verdict_cell",
]

CSS = """
.approxdp-field-error { color: #b00020; font-size: 0.85rem; margin: -0.6rem 0 0.8rem; }
.approxdp-error { color: #b00020; font-weight: 600; margin: 0.5rem 0; }
.approxdp-warning { background: #fff4e5; border-left: 4px solid #e67e00;
  padding: 0.4rem 0.7rem; margin: 0.5rem 0; }
.approxdp-simulation { border: 3px dashed #c0392b; padding: 0.6rem; border-radius: 6px;
  background: #fff6f4; }
.approxdp-simulation .banner { color: #c0392b; font-weight: 700; }
.approxdp-cost { border: 2px solid #1f4e79; padding: 0.6rem; border-radius: 6px;
  background: #f2f7fc; }
.approxdp-released { border: 2px solid #2e7d32; padding: 0.6rem; border-radius: 6px; }
.approxdp-binding { font-size: 0.85rem; }
td.no { color: #b00020; font-weight: 700; }
td.yes { color: #2e7d32; }
pre.approxdp-explain { font-size: 0.8rem; white-space: pre-wrap; }
"""


def table(headers: Sequence[str], rows: Sequence[tuple[str, Sequence[TagChild]]],
          table_id: str) -> Tag:
    """A Bootstrap table; each row carries ``data-row`` (a method, rule, ...) for tests."""
    return ui.tags.table(
        ui.tags.thead(ui.tags.tr(*[ui.tags.th(h) for h in headers])),
        ui.tags.tbody(*[
            ui.tags.tr(*[c if isinstance(c, Tag) and c.name == "td" else ui.tags.td(c)
                         for c in cells], data_row=key)
            for key, cells in rows
        ]),
        class_="table table-sm table-striped align-middle", id=table_id,
    )


def text_field(input_id: str, label: str, value: str, help_text: str | None = None,
               *, on_blur: bool = False) -> Tag:
    """A text input with its one-line error output under it; ``on_blur``: the server sees a
    new value when the field loses focus or on Enter (the wizard's fields: a click on a step's
    button then always acts on what is typed), else as it is typed."""
    return ui.div(
        ui.input_text(input_id, label, value, width="100%",
                      update_on="blur" if on_blur else "change"),
        ui.output_ui(f"{input_id}__error"),
        ui.tags.small(help_text, class_="text-muted d-block mb-2") if help_text else None,
    )


def error_box(outcome: Outcome, element_id: str | None = None) -> Tag | None:
    """The outcome's error as one line at the top of its step (None when it has a value)."""
    if outcome.ok:
        return None
    return ui.div(outcome.error, class_="approxdp-error", role="alert", id=element_id)


def verdict_cell(private: bool | None) -> Tag:
    """A table cell: yes, NO — not private, or a dash (no verdict)."""
    if private is None:
        return ui.tags.td("—")
    if private:
        return ui.tags.td("yes", class_="yes")
    return ui.tags.td("NO — not private", class_="no")


def _key_text(value: Any) -> str:
    return "NULL" if value is None else str(value)


def cells_table(release: Mapping[str, Any], table_id: str, simulated: bool) -> Tag:
    """A released (or simulated) result's cells: keys, value, interval, half-width, noise."""
    columns = list(release["key_columns"] or [])
    cells = release["cells"]
    level = f"{release['level']:.0%}"
    values = fmt_values([x for c in cells for x in (c["value"], c["ci_low"], c["ci_high"])])
    stds = fmt_values([c["std"] for c in cells], 4)
    widths = fmt_values([(c["ci_high"] - c["ci_low"]) / 2 for c in cells], 4)
    headers = [*columns, "simulated value" if simulated else "value", f"{level} interval",
               "± (half-width)", "noise std"]
    rows = []
    for i, cell in enumerate(cells):
        keys = [_key_text(v) for v in cell["key"].values()] if columns else []
        value, low, high = values[3 * i: 3 * i + 3]
        rows.append((str(i), [*keys, value, f"[{low}, {high}]", widths[i], stds[i]]))
    return table(headers, rows, table_id)


def budget_table(status: Mapping[str, Any], table_id: str) -> Tag:
    """A budget status: total, spent and remaining (ε, δ)."""
    return table(["", "ε", "δ"], [
        ("budget", ["total budget", fmt(status["budget_epsilon"]),
                    fmt(status["budget_delta"])]),
        ("spent", ["spent (ε at the full δ, δ at the full ε)", fmt(status["spent_epsilon"]),
                   fmt(status["spent_delta"])]),
        ("remaining", [ui.tags.b("remaining"), ui.tags.b(left(status["remaining_epsilon"])),
                       ui.tags.b(left(status["remaining_delta"]))]),
    ], table_id)


def rdp_share_table(share: Mapping[str, Any], table_id: str) -> Tag:
    """A Rényi share (:func:`~approxdp.reports.ledger.rdp_share_dict`) order by order: α, its
    budget B, what is used, what is left; the order with the most left marked."""
    rows: list[tuple[str, list[TagChild]]] = []
    for a, b, u in zip(share["orders"], share["budgets"], share["used"], strict=True):
        best = a == share["best_order"]
        rest = ("none (B ≤ 0)" if b <= 0 else fmt(b - u) if u <= b else "used up")
        cells: list[TagChild] = [f"{a:g}", fmt(b), fmt(u if u < 1e300 else math.inf), rest]
        if best:
            cells = [ui.tags.b(c) for c in cells]
            cells[0] = ui.tags.b(f"{a:g} (most left)")
        rows.append((f"{a:g}", cells))
    return ui.div(
        ui.p(ui.tags.b("Rényi share "),
             f"(ε, δ) = ({fmt(share['epsilon'])}, {fmt(share['delta'])}): a Rényi filter at "
             f"orders fixed when the ledger was created; each order converts to (ε, δ/k) = "
             f"({fmt(share['epsilon'])}, {fmt(share['delta_per_order'])}), and a request is "
             "admitted while some order stays within its budget. "
             + ("" if share["alive"] else "Every order is used up: it admits nothing more."),
             id=f"{table_id}_summary"),
        table(["order α", "budget B", "used Σρ", "left"], rows, table_id),
    )


def sub_budgets_table(subs: Mapping[str, Any], table_id: str) -> Tag:
    """Sub-budgets (:func:`~approxdp.reports.ledger.sub_budget_dicts`): each one's (ε, δ),
    spends and what it has left."""
    return table(["sub-budget", "file", "ε", "δ", "spends", "remaining ε (at its δ)"], [
        (name, [name, Path(sub["file"]).name if sub.get("file") else "(in memory)",
                fmt(sub["budget"]["epsilon"]), fmt(sub["budget"]["delta"]),
                str(sub["status"]["count"]), left(sub["status"]["remaining_epsilon"])])
        for name, sub in subs.items()], table_id)


def left(remaining: float) -> str:
    """What is left of a budget, never below 0: a ledger past its budget (a re-certified old
    file) has nothing left, and a negative "remaining" would read as a debt to pay back."""
    return fmt(max(float(remaining), 0.0))


def field_errors(output: Outputs, outcome: Callable[[], Outcome], ids: Sequence[str]) -> None:
    """One error output per input id: the outcome's error when it belongs to that input."""
    for input_id in ids:
        def make(this: str) -> None:
            @output(id=f"{this}__error")
            @render.ui
            def _error_line() -> TagChild:
                result = outcome()
                if result.ok or result.field != this:
                    return None
                return ui.div(result.error, class_="approxdp-field-error", role="alert",
                              data_field=this)
        make(input_id)

