"""The Release wizard page: a data file fixed at start → privacy unit and query → simulated
accuracy, spending nothing → an explicit, costed spend through the ledger → downloads.

What each step computes is in :mod:`approxdp.web.wizard_steps` (testable without a browser);
this module lays the steps out and wires them: the only action that spends is "Spend and
release", which appears only after "Review the cost" has shown the cost for exactly the form as
it stands, and is consumed by its first click.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from htmltools import TagChild
from shiny import Inputs, Outputs, reactive, render, req, ui

from approxdp.releases.kinds import RELEASE_KINDS, KindInputs, ReleaseKind
from approxdp.releases.session import BOUNDS_SHARE
from approxdp.reports.formatting import fmt
from approxdp.web import wizard_steps as steps
from approxdp.web.config import ServeConfig, data_file
from approxdp.web.forms import Outcome, attempt
from approxdp.web.widgets import (
    cells_table,
    error_box,
    field_errors,
    left,
    table,
    text_field,
)

__all__ = ["FIELDS", "panel", "server"]

#: API parameter name → input id of the wizard's fields.
FIELDS = {
    "file": "wiz_file", "kind": "wiz_kind", "column": "wiz_column", "low": "wiz_low",
    "high": "wiz_high", "bounds_mode": "wiz_bounds_mode", "by": "wiz_by",
    "columns": "wiz_columns", "domain": "wiz_domain",
    "outside_domain": "wiz_outside_domain", "epsilon": "wiz_epsilon", "delta": "wiz_delta",
    "level": "wiz_level", "privacy_unit": "wiz_unit", "max_partitions": "wiz_max_partitions",
    "max_rows_per_partition": "wiz_max_rows", "neighbouring": "wiz_neighbouring",
    "qs": "wiz_qs", "bins": "wiz_bins", "branching": "wiz_branching", "casts": "wiz_casts",
    "cast_errors": "wiz_cast_errors", "rows": "wiz_rows",
}


def _when(test: Callable[[ReleaseKind], bool]) -> str:
    """A condition (JavaScript) true when the chosen statistic is a kind that passes ``test``:
    which fields each statistic shows comes from the registry of kinds."""
    names = [k.name for k in RELEASE_KINDS.values() if test(k)]
    return f"{json.dumps(names)}.includes(input.wiz_kind)"


def _value_choices(schema: Mapping[str, str]) -> dict[str, str]:
    """Numeric columns first, then the text columns (which need converting to numbers)."""
    numeric = {c: c for c, k in schema.items() if k == "numeric"}
    text = {c: f"{c} (text: convert it below)" for c, k in schema.items() if k == "string"}
    return {**numeric, **text}


def _text_columns(schema: Mapping[str, str]) -> dict[str, str]:
    return {c: c for c, k in schema.items() if k == "string"}


def panel(config: ServeConfig, schema: Mapping[str, str]) -> Any:
    """The page's layout: the five steps (or how to give a data file)."""
    if not config.data:
        return ui.nav_panel("Release wizard", ui.p(
            "No data file: start the server with ", ui.tags.code("approxdp serve --data FILE"),
            " (CSV or Parquet). Files are never uploaded or chosen from the browser."),
            value="wizard")
    default_tree = KindInputs().tree()  # the labels name the registry's default shape
    columns = list(schema)
    numeric = [c for c, k in schema.items() if k == "numeric"]
    units = {"": "each row (no unit column)", **{c: c for c in columns}}
    step1 = ui.card(
        ui.card_header("1. Data (files given on the command line)"),
        ui.input_select("wiz_file", "data file", {f.key: f.label for f in config.data}),
        ui.output_ui("wiz_file__error"),
        ui.output_ui("wiz_schema"),
        ui.input_selectize("wiz_casts", "convert to numbers (text columns with a few values "
                           "that are not numbers)", _text_columns(schema), multiple=True),
        ui.output_ui("wiz_casts__error"),
        ui.input_select("wiz_cast_errors", "values that are not numbers",
                        {"drop": "drop them (they become missing values)",
                         "error": "refuse the release"}),
    )
    step2 = ui.card(
        ui.card_header("2. Privacy unit: whom to protect"),
        ui.input_select("wiz_unit", "privacy unit column", units),
        ui.output_ui("wiz_unit__error"),
        ui.layout_columns(
            text_field("wiz_max_partitions", "cells one unit may touch (k)", "1", on_blur=True),
            text_field("wiz_max_rows", "rows per unit per cell (m)", "1", on_blur=True),
            col_widths=(6, 6),
        ),
        ui.input_select("wiz_neighbouring", "neighbouring datasets",
                        {"add-remove": "add or remove one unit",
                         "replace-one": "replace one unit"}),
    )
    step3 = ui.card(
        ui.card_header("3. Query and budget"),
        ui.input_select("wiz_kind", "statistic",
                        {k.name: f"{k.name}: {k.summary}" for k in RELEASE_KINDS.values()},
                        selected="mean" if numeric else "count"),
        ui.panel_conditional(
            _when(lambda k: k.columns == "one"),
            ui.input_select("wiz_column", "value column", _value_choices(schema)),
            ui.output_ui("wiz_column__error"),
        ),
        ui.panel_conditional(
            _when(lambda k: k.bounds),
            ui.input_radio_buttons(
                "wiz_bounds_mode", "clamping bounds",
                {"given": "I give them (public knowledge, not read from the data)",
                 "private": f"estimate them privately first ({BOUNDS_SHARE:.0%} of this "
                            "release's ε and δ)"}),
        ),
        ui.panel_conditional(
            _when(lambda k: k.bounds) + " && input.wiz_bounds_mode !== 'private'",
            ui.layout_columns(text_field("wiz_low", "lower bound", "0", on_blur=True),
                              text_field("wiz_high", "upper bound", "100", on_blur=True),
                              col_widths=(6, 6)),
        ),
        ui.panel_conditional(
            _when(lambda k: k.qs),
            text_field("wiz_qs", "quantiles (comma-separated)", "0.25, 0.5, 0.75",
                       on_blur=True),
        ),
        ui.panel_conditional(
            _when(lambda k: k.tree),
            ui.layout_columns(
                text_field("wiz_bins", f"tree leaves, bins (empty: {default_tree.bins})", "",
                           on_blur=True),
                text_field("wiz_branching", f"branching (empty: {default_tree.branching})", "",
                           on_blur=True),
                col_widths=(6, 6)),
            ui.tags.small("The quantile tree's shape is public (it shows in the release): "
                          "choose it from what you know, not from the data — bins a power of "
                          "branching; e.g. 64 and 8 for a few hundred values. A release that "
                          "is not informative names the shape expected to do better.",
                          class_="text-muted d-block mb-2"),
        ),
        ui.panel_conditional(
            _when(lambda k: k.groups),
            ui.input_selectize("wiz_by", "group by", {c: c for c in columns}, multiple=True),
            ui.output_ui("wiz_by__error"),
        ),
        ui.panel_conditional(
            _when(lambda k: k.columns == "many"),
            ui.input_selectize("wiz_columns", "count over", {c: c for c in columns},
                               multiple=True),
            ui.output_ui("wiz_columns__error"),
        ),
        ui.panel_conditional(
            _when(lambda k: k.domain),
            ui.input_text_area("wiz_domain", "public domain of grouping columns (one "
                               "COLUMN=V1,V2,... per line; none: cells chosen privately)", "",
                               rows=2, width="100%", update_on="blur"),
            ui.output_ui("wiz_domain__error"),
            ui.output_ui("wiz_selection_note"),
            ui.input_select("wiz_outside_domain", "rows outside the domain",
                            {"error": "refuse the release", "drop": "drop them"}),
        ),
        ui.layout_columns(text_field("wiz_epsilon", "ε of this release", "0.5", on_blur=True),
                          text_field("wiz_delta", "δ of this release", "1e-6", on_blur=True),
                          text_field("wiz_level", "confidence level", "0.95", on_blur=True),
                          col_widths=(4, 4, 4)),
    )
    step4 = ui.card(
        ui.card_header("4. Simulated accuracy (spends nothing)"),
        ui.p("Runs the query on a synthetic table made from your choices only (bounds, "
             "domains, an assumed number of rows) — never on the data — with a throwaway "
             "budget. Nothing is spent; the numbers are a seeded simulation, NOT private."),
        ui.layout_columns(
            text_field("wiz_rows", "assumed number of rows (a public guess)", "1000", on_blur=True),
            ui.div(ui.input_action_button("wiz_simulate", "Simulate accuracy (spends nothing)",
                                          class_="btn-secondary mt-4")),
            col_widths=(5, 7),
        ),
        ui.output_ui("wiz_simulation"),
    )
    pay_from: list[TagChild] = []
    if config.sub_budgets:
        pay_from = [ui.input_select(
            "wiz_ledger_sub", "pay from",
            {"": "the ledger's own budget",
             **{n: f"sub-budget {n!r} (a ledger of its own)" for n in config.sub_budgets}}),
            ui.output_ui("wiz_ledger_sub__error")]
    step5 = ui.card(
        ui.card_header("5. Spend and release"),
        ui.p("First review what the release costs; the spend button appears only then, for "
             "exactly that form, and each click releases once."),
        *pay_from,
        ui.input_action_button("wiz_review", "Review the cost", class_="btn-outline-primary"),
        ui.output_ui("wiz_cost"),
        ui.output_ui("wiz_released"),
    )
    return ui.nav_panel(
        "Release wizard",
        ui.layout_columns(ui.div(step1, step2), step3, col_widths=(5, 7)),
        step4, step5,
        value="wizard",
    )


def _small_data(advice: list[str]) -> TagChild:
    """The API's small-data advice at the assumed number of rows (step 4's public guess):
    computed on synthetic rows, so it holds no number from the data."""
    if not advice:
        return None
    return ui.div(
        ui.tags.b("Small data? "),
        "At the assumed number of rows (step 4 — your guess, not the data):",
        ui.tags.ul(*[ui.tags.li(text) for text in advice]),
        class_="approxdp-warning", id="wiz_small_data",
    )


def _payer(cost: Mapping[str, Any]) -> str:
    """``sub-budget 'a' of `` when a sub-budget pays, else nothing."""
    return "" if cost.get("ledger_sub") is None else f"sub-budget {cost['ledger_sub']!r} of "


def _form(input: Inputs, config: ServeConfig) -> dict[str, object]:
    form: dict[str, object] = {name: input[input_id]() for name, input_id in FIELDS.items()
                               if name != "rows"}
    if config.sub_budgets:  # the field exists only for a ledger with sub-budgets
        form["ledger_sub"] = input.wiz_ledger_sub()
    return form



def server(config: ServeConfig, input: Inputs, output: Outputs) -> None:
    """The page's outputs and its two actions (review, then spend once)."""
    @reactive.calc
    def schema() -> Outcome:
        return attempt(lambda: steps.schema_of(
            data_file(config, input.wiz_file())), {"file": "wiz_file"})

    @reactive.effect
    def _columns_follow_the_file() -> None:
        result = schema()
        if not result.ok:
            return
        cols = list(result.value)
        with reactive.isolate():
            ui.update_select("wiz_unit", choices={"": "each row (no unit column)",
                                                  **{c: c for c in cols}})
            ui.update_select("wiz_column", choices=_value_choices(result.value))
            ui.update_selectize("wiz_casts", choices=_text_columns(result.value))
            ui.update_selectize("wiz_by", choices={c: c for c in cols})
            ui.update_selectize("wiz_columns", choices={c: c for c in cols})

    @render.ui
    def wiz_schema() -> TagChild:
        result = schema()
        if not result.ok:
            return None
        return ui.div(
            ui.tags.small("Columns (names and types only; no values are read or shown):",
                          class_="text-muted"),
            table(["column", "type"], [(c, [c, k]) for c, k in result.value.items()],
                   "wiz_columns_table"))

    @reactive.calc
    def spec() -> Outcome:
        shape = schema()
        if not shape.ok:
            return shape
        return attempt(lambda: steps.read_spec(config, _form(input, config), shape.value),
                       {**FIELDS, "ledger_sub": "wiz_ledger_sub"})

    @render.ui
    def wiz_selection_note() -> TagChild:
        current = spec()
        if not current.ok or not current.value.groups or current.value.domain:
            return None
        return ui.p(f"No domain typed — {steps.PARTITION_SELECTION}.",
                    class_="text-muted small", id="wiz_selection_explained")

    @reactive.calc
    @reactive.event(input.wiz_simulate)
    def simulation() -> Outcome:
        current = spec()
        if not current.ok:
            return current
        made_for = current.value
        return attempt(lambda: (made_for, steps.simulate(made_for, schema().value,
                                                         input.wiz_rows())),
                       {"rows": "wiz_rows"})

    @reactive.calc
    def form_errors() -> Outcome:
        current = spec()
        if not current.ok:
            return current
        try:
            return simulation()
        except Exception:  # not simulated yet
            return current

    field_errors(output, form_errors, list(FIELDS.values())
                 + (["wiz_ledger_sub"] if config.sub_budgets else []))

    @render.ui
    def wiz_simulation() -> TagChild:
        result = simulation()
        if not result.ok:
            return error_box(result, "wiz_simulation_error") if result.field is None else None
        made_for, sim = result.value
        current = spec()
        if not current.ok or current.value != made_for:  # the form changed: clear it
            return ui.div("The form changed since this simulation: simulate again.",
                          class_="text-muted", id="wiz_simulation_stale")
        rel = sim["result"]
        return ui.div(
            ui.p("SIMULATION on synthetic data — not your data, NOT private, nothing spent",
                 class_="banner"),
            ui.p(f"{rel['label']}: {sim['rows']} assumed rows; σ = {fmt(rel['sigma'])} on the "
                 f"scaled vector, sensitivity Δ2 = {fmt(rel['sensitivity']['l2'])}. The noise "
                 "and interval widths are what to expect; the values mean nothing."),
            cells_table(rel, "wiz_simulated_cells", simulated=True),
            class_="approxdp-simulation", id="wiz_simulation_box",
        )

    reviewed: reactive.Value[tuple[steps.ReleaseSpec, dict[str, Any]] | None] = (
        reactive.value(None))
    review_error: reactive.Value[Outcome | None] = reactive.value(None)
    released: reactive.Value[Outcome | None] = reactive.value(None)
    released_spec: reactive.Value[steps.ReleaseSpec | None] = reactive.value(None)

    @reactive.effect
    @reactive.event(input.wiz_review)
    def _review() -> None:
        current = spec()
        if not current.ok:
            reviewed.set(None)
            review_error.set(current)
            return
        if config.ledger is None:
            reviewed.set(None)
            review_error.set(Outcome(error="no ledger: start the server with --ledger FILE "
                                     "(and --budget EPSILON DELTA for a new one) to release"))
            return
        ledger = config.ledger
        preview = attempt(lambda: steps.cost_preview(current.value, ledger, schema().value,
                                                     rows=input.wiz_rows()),
                          {"rows": "wiz_rows"})
        if not preview.ok:
            reviewed.set(None)
            review_error.set(preview)
            return
        review_error.set(None)
        reviewed.set((current.value, preview.value))

    @render.ui
    def wiz_cost() -> TagChild:
        problem = review_error.get()
        if problem is not None:
            return error_box(problem, "wiz_cost_error") if problem.field is None else ui.div(
                "Fix the form (see the message by the field), then review again.",
                class_="approxdp-error")
        pending = reviewed.get()
        if pending is None:
            return None
        current = spec()
        if not current.ok or current.value != pending[0]:
            return ui.div("The form changed since the review: review the cost again.",
                          class_="approxdp-error", id="wiz_stale")
        cost = pending[1]
        fits = cost["fits"]
        spend_label = f"Spend ε = {cost['epsilon']:g}, δ = {cost['delta']:g} and release"
        return ui.div(
            ui.h6("The query (exactly what the spend button releases)"),
            table(["", ""], [(name, [name, value]) for name, value in cost["query"]],
                  "wiz_query_table"),
            _small_data(cost["small_data"]),
            ui.h6("This release will spend"),
            ui.p(ui.tags.b(f"ε = {cost['epsilon']:g}, δ = {cost['delta']:g}", id="wiz_price"),
                 f" from {_payer(cost)}ledger {Path(cost['ledger']).name} "
                 f"({cost['composition']!r})."),
            table(["", "remaining ε", "remaining δ"], [
                ("now", ["now", left(cost["now"]["remaining_epsilon"]),
                         left(cost["now"]["remaining_delta"])]),
                ("after", ["after (its own events, charged as the ledger will)",
                           left(cost["after"]["remaining_epsilon"]),
                           left(cost["after"]["remaining_delta"])]
                 if fits else ["after", "does not fit", "does not fit"]),
            ], "wiz_cost_table"),
            None if cost.get("rdp_share") is None else ui.p(ui.tags.small(
                f"This ledger keeps a Rényi share (ε, δ) = ({cost['rdp_share']['epsilon']:g}, "
                f"{cost['rdp_share']['delta']:g}) for subsampled Gaussians (DP-SGD steps "
                "spent one at a time); this release is charged to the Gaussian-DP room "
                "first, and to the share only where the room cannot take it."),
                id="wiz_rdp_share"),
            ui.input_action_button("wiz_spend", spend_label, class_="btn-danger",
                                   disabled=not fits) if fits else
            ui.div("It does not fit in what is left: nothing can be spent. "
                   + str(cost.get("reason") or ""), class_="approxdp-error"),
            class_="approxdp-cost", id="wiz_cost_box",
        )

    @reactive.effect
    @reactive.event(input.wiz_spend)
    def _spend() -> None:
        pending = reviewed.get()
        current = spec()
        reviewed.set(None)  # one click, one release: the button goes away first
        if pending is None and released.get() is not None:
            return  # a second click on a button its first click consumed: nothing to do
        if pending is None or not current.ok or current.value != pending[0]:
            released.set(Outcome(error="nothing spent: review the cost of the current form "
                                       "first"))
            return
        ledger = config.ledger
        if ledger is None:  # cannot happen: review refuses without a ledger
            return
        released.set(attempt(lambda: steps.release(pending[0], schema().value, ledger), {}))
        released_spec.set(pending[0])

    @render.ui
    def wiz_released() -> TagChild:
        result = released.get()
        if result is None:
            return None
        if not result.ok:
            return error_box(result, "wiz_release_error")
        current = spec()
        if not current.ok or current.value != released_spec.get():  # the form changed
            return ui.div("The form changed since the last release: its result is no longer "
                          "shown (its spend is in the ledger). Review and spend again to "
                          "release the new query.", class_="text-muted", id="wiz_released_stale")
        data = result.value
        rel = data["result"]
        status = data["budget"]
        return ui.div(
            ui.h5(f"Released: {rel['label']} (private, secure noise)"),
            cells_table(rel, "wiz_released_cells", simulated=False),
            ui.p(("Ledger" if data.get("ledger_sub") is None else
                  f"Sub-budget {data['ledger_sub']!r}")
                 + f" now: {status['count']} spend(s); remaining ε = "
                 f"{left(status['remaining_epsilon'])}, δ = "
                 f"{left(status['remaining_delta'])}."),
            ui.div(
                ui.download_button("wiz_download_json", "Download JSON",
                                   class_="btn-outline-success me-2"),
                ui.download_button("wiz_download_csv", "Download CSV",
                                   class_="btn-outline-success me-2"),
                ui.download_button("wiz_download_script", "Download Python script",
                                   class_="btn-outline-success"),
            ),
            ui.tags.details(ui.tags.summary("How it was made (explain())"),
                            ui.tags.pre(data["explain"], class_="approxdp-explain")),
            class_="approxdp-released", id="wiz_released_box",
        )

    def _done() -> dict[str, Any]:
        result = released.get()
        req(result is not None and result.ok)
        assert result is not None
        return dict(result.value)

    def _stem() -> str:
        made = released_spec.get()
        label = made.label if made is not None else "release"
        return "".join(ch if ch.isalnum() else "_" for ch in label).strip("_") or "release"

    @render.download_button(filename=lambda: f"{_stem()}.json", media_type="application/json")
    def wiz_download_json() -> Any:
        yield steps.release_json(_done())

    @render.download_button(filename=lambda: f"{_stem()}.csv", media_type="text/csv")
    def wiz_download_csv() -> Any:
        yield steps.release_csv(_done())

    @render.download_button(filename=lambda: f"{_stem()}.py", media_type="text/x-python")
    def wiz_download_script() -> Any:
        _done()
        made = released_spec.get()
        req(made is not None)
        assert made is not None
        yield steps.release_script(made, schema().value, config.ledger)
