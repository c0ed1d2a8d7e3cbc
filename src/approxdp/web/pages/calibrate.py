"""The Calibrate page: every calibration method's σ at (ε, δ, Δ) with its exact verdict (the
report of ``approxdp calibrate``), the privacy profile of a chosen σ, and where the classical
formulas are not private."""

from __future__ import annotations

from typing import Any

from htmltools import TagChild
from shiny import Inputs, Outputs, reactive, render, req, ui

from approxdp.calibration import CALIBRATION_METHODS
from approxdp.reports.calibration import calibration_report
from approxdp.reports.formatting import fmt
from approxdp.web import figures
from approxdp.web.forms import Outcome, attempt, choice, parameter
from approxdp.web.widgets import error_box, field_errors, table, text_field, verdict_cell

__all__ = ["FIELDS", "calibrate_view", "panel", "server"]

#: API parameter name → input id of the page's fields.
FIELDS = {"epsilon": "cal_epsilon", "delta": "cal_delta", "sensitivity": "cal_sensitivity",
          "notion": "cal_notion"}
_NOTIONS = ("dp", "pdp")


def calibrate_view(
    epsilon: object, delta: object, sensitivity: object, notion: object = "dp"
) -> dict[str, Any]:
    """``approxdp calibrate``'s report for the typed (ε, δ, Δ): every method's σ, its ratio to
    the optimum, its true δ and whether it is private."""
    eps = parameter("epsilon", epsilon)
    dlt = parameter("delta", delta)
    sens = parameter("sensitivity", sensitivity)
    kind = choice("notion", notion, _NOTIONS)
    return calibration_report(eps, dlt, sens, "pdp" if kind == "pdp" else "dp")


def panel() -> Any:
    """The page's layout: the fields in a sidebar, the methods' table and two figures."""
    return ui.nav_panel(
        "Calibrate",
        ui.layout_sidebar(
            ui.sidebar(
                text_field("cal_epsilon", "ε", "1", "≥ 0"),
                text_field("cal_delta", "δ", "1e-5", "in (0, 1)"),
                text_field("cal_sensitivity", "sensitivity Δ (ℓ2)", "1"),
                ui.input_select("cal_notion", "notion", {"dp": "(ε, δ)-DP",
                                                         "pdp": "probabilistic DP"}),
                ui.input_select("cal_method", "profile of the σ of",
                                {m: m for m in CALIBRATION_METHODS}, selected="optimal"),
                width=280,
            ),
            ui.output_ui("cal_summary"),
            ui.card(ui.card_header("Every calibration method at this (ε, δ, Δ)"),
                    ui.output_ui("cal_table")),
            ui.layout_columns(
                ui.card(ui.card_header("Privacy profile δ(ε) of the chosen σ"),
                        ui.output_plot("cal_profile", height="400px")),
                ui.card(ui.card_header("Where the classical formulas are not private "
                                       "(Zhao et al. Fig. 1; Fig. 3 for pDP)"),
                        ui.output_plot("cal_failure", height="400px")),
                col_widths=(4, 8),
            ),
        ),
        value="calibrate",
    )


def server(input: Inputs, output: Outputs) -> None:
    """The page's outputs."""
    @reactive.calc
    def calibration() -> Outcome:
        return attempt(lambda: calibrate_view(
            input.cal_epsilon(), input.cal_delta(), input.cal_sensitivity(),
            input.cal_notion()), FIELDS)

    field_errors(output, calibration, list(FIELDS.values()))

    @render.ui
    def cal_summary() -> TagChild:
        result = calibration()
        if not result.ok:
            return error_box(result, "cal_error") if result.field is None else None
        rep = result.value
        word = "DP" if rep["notion"] == "dp" else "pDP"
        return ui.h4(
            f"Least σ for ({rep['epsilon']:g}, {rep['delta']:g})-{word} with Δ = "
            f"{rep['sensitivity']:g}: ",
            ui.tags.span(f"σ = {fmt(rep['reference_sigma'], 5)}", id="cal_sigma"),
            class_="my-2",
        )

    @render.ui
    def cal_table() -> TagChild:
        result = calibration()
        req(result.ok)
        rep = result.value
        word = "DP" if rep["notion"] == "dp" else "pDP"
        rows = []
        for row in rep["methods"]:
            if not row["defined"]:
                rows.append((row["method"], [row["method"], "—", "—", "—", verdict_cell(None),
                                             row["reason"]]))
                continue
            ratio = row["ratio_to_optimal"]
            note = (f"fails {word} above ε = {fmt(row['fails_above_epsilon'], 4)}"
                    if row["fails_above_epsilon"] is not None else row["source"])
            rows.append((row["method"], [
                row["method"], fmt(row["sigma"]), "n/a" if ratio is None else f"{ratio:.4f}",
                fmt(row["true_delta"], 4), verdict_cell(row["private"]), note]))
        return table(["method", "σ", f"× {rep['reference_method']}", "true δ",
                       f"{word}?", "note"], rows, "cal_methods")

    @render.plot(alt="privacy profile of the chosen sigma")
    def cal_profile() -> Any:
        result = calibration()
        req(result.ok)
        return figures.profile_figure(result.value, input.cal_method())

    @render.plot(alt="failure region of the classical formulas with the current point")
    def cal_failure() -> Any:
        result = calibration()
        req(result.ok)
        rep = result.value
        return figures.failure_figure(rep["notion"], rep["epsilon"], rep["delta"])
