"""The Shiny for Python app of ``approxdp serve``: four pages over :mod:`.pages` and
:mod:`.wizard`.

Every output that can fail renders the error as ONE line (the API's error type and message,
:func:`~.forms.error_text`) under the field it is about, or at the top of its step; Shiny never
shows a traceback (and the app sanitizes any error that escapes). The only action that spends
privacy budget is the wizard's "Spend and release" button, which appears only after "Review the
cost" has shown the cost for exactly the form as it stands, and is consumed by its first click.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from htmltools import Tag, TagChild
from shiny import App, Inputs, Outputs, Session, reactive, render, req, ui

from approxdp.calibration import CALIBRATION_METHODS
from approxdp.cli.output import fmt, fmt_values
from approxdp.cli.web import figures, pages, wizard
from approxdp.cli.web.config import ServeConfig, data_file, is_loopback
from approxdp.cli.web.forms import error_text, locate
from approxdp.errors import ApproxDPError
from approxdp.events import SAMPLINGS

__all__ = ["Outcome", "attempt", "build_app"]

_CSS = """
.approxdp-field-error { color: #b00020; font-size: 0.85rem; margin: -0.6rem 0 0.8rem; }
.approxdp-error { color: #b00020; font-weight: 600; margin: 0.5rem 0; }
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


@dataclass(frozen=True, slots=True)
class Outcome:
    """A computation's value, or its one-line error and the input it belongs to (if any)."""

    value: Any = None
    error: str | None = None
    field: str | None = None

    @property
    def ok(self) -> bool:
        """True when there is a value (no error)."""
        return self.error is None


def attempt(compute: Callable[[], Any], fields: Mapping[str, str]) -> Outcome:
    """Run ``compute``; on failure keep its one-line error and the input id (from ``fields``:
    API parameter name → input id) of the field it names. Never raises."""
    try:
        return Outcome(value=compute())
    except Exception as exc:  # shown on the page as one line; a bug is called internal
        name = locate(exc, fields) if isinstance(exc, ApproxDPError) else None
        return Outcome(error=error_text(exc), field=fields.get(name) if name else None)


# -- small HTML helpers ------------------------------------------------------------------------
def _table(headers: Sequence[str], rows: Sequence[tuple[str, Sequence[TagChild]]],
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


def _field(input_id: str, label: str, value: str, help_text: str | None = None,
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


def _error(outcome: Outcome, element_id: str | None = None) -> Tag | None:
    if outcome.ok:
        return None
    return ui.div(outcome.error, class_="approxdp-error", role="alert", id=element_id)


def _verdict(private: bool | None) -> Tag:
    if private is None:
        return ui.tags.td("—")
    if private:
        return ui.tags.td("yes", class_="yes")
    return ui.tags.td("NO — not private", class_="no")


def _key_text(value: Any) -> str:
    return "NULL" if value is None else str(value)


def _cells_table(release: Mapping[str, Any], table_id: str, simulated: bool) -> Tag:
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
    return _table(headers, rows, table_id)


def _budget_table(status: Mapping[str, Any], table_id: str) -> Tag:
    return _table(["", "ε", "δ"], [
        ("budget", ["total budget", fmt(status["budget_epsilon"]),
                    fmt(status["budget_delta"])]),
        ("spent", ["spent (ε at the full δ, δ at the full ε)", fmt(status["spent_epsilon"]),
                   fmt(status["spent_delta"])]),
        ("remaining", [ui.tags.b("remaining"), ui.tags.b(fmt(status["remaining_epsilon"])),
                       ui.tags.b(fmt(status["remaining_delta"]))]),
    ], table_id)


# -- the pages -----------------------------------------------------------------------------------
_CAL_FIELDS = {"epsilon": "cal_epsilon", "delta": "cal_delta", "sensitivity": "cal_sensitivity",
               "notion": "cal_notion"}
_COMPOSE_FIELDS = {"releases": "cmp_releases", "delta": "cmp_delta"}
_SGD_FIELDS = {"sample_rate": "sgd_sample_rate", "noise_multiplier": "sgd_noise_multiplier",
               "steps": "sgd_steps", "delta": "sgd_delta", "sampling": "sgd_sampling"}
_NOISE_FIELDS = {**_SGD_FIELDS, "target_epsilon": "sgd_target_epsilon"}
_WIZ_FIELDS = {
    "file": "wiz_file", "kind": "wiz_kind", "column": "wiz_column", "low": "wiz_low",
    "high": "wiz_high", "by": "wiz_by", "columns": "wiz_columns", "domain": "wiz_domain",
    "outside_domain": "wiz_outside_domain", "epsilon": "wiz_epsilon", "delta": "wiz_delta",
    "level": "wiz_level", "privacy_unit": "wiz_unit", "max_partitions": "wiz_max_partitions",
    "max_rows_per_partition": "wiz_max_rows", "neighbouring": "wiz_neighbouring",
    "rows": "wiz_rows",
}


def _calibrate_page() -> Any:
    return ui.nav_panel(
        "Calibrate",
        ui.layout_sidebar(
            ui.sidebar(
                _field("cal_epsilon", "ε", "1", "≥ 0"),
                _field("cal_delta", "δ", "1e-5", "in (0, 1)"),
                _field("cal_sensitivity", "sensitivity Δ (ℓ2)", "1"),
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


def _compose_page() -> Any:
    return ui.nav_panel(
        "Compose / DP-SGD",
        ui.layout_columns(
            ui.card(
                ui.card_header("Compose releases"),
                ui.input_text_area("cmp_releases", "releases (one per line: [Kx]gaussian:σ[:Δ], "
                                   "[Kx]laplace:b[:Δ], [Kx]dp:ε[:δ])",
                                   "100xgaussian:20\nlaplace:10", rows=4, width="100%"),
                ui.output_ui("cmp_releases__error"),
                _field("cmp_delta", "total δ", "1e-5"),
                ui.output_ui("cmp_table"),
            ),
            ui.card(
                ui.card_header("DP-SGD: (q, σ, T) → ε under every accountant"),
                ui.layout_columns(
                    _field("sgd_sample_rate", "sampling rate q", "0.01"),
                    _field("sgd_noise_multiplier", "noise multiplier σ", "1.1"),
                    _field("sgd_steps", "steps T", "1000"),
                    _field("sgd_delta", "δ", "1e-5"),
                    col_widths=(3, 3, 3, 3),
                ),
                ui.input_select("sgd_sampling", "sampling", {s: s for s in SAMPLINGS}),
                ui.output_ui("sgd_table"),
                ui.output_plot("sgd_curve", height="330px"),
                ui.hr(),
                ui.h6("Noise multiplier for a target ε (certified by the PLD accountant)"),
                ui.layout_columns(
                    _field("sgd_target_epsilon", "target ε", "2"),
                    ui.div(ui.input_action_button("sgd_find", "Find the noise multiplier",
                                                  class_="btn-primary mt-4")),
                    col_widths=(4, 8),
                ),
                ui.output_ui("sgd_noise"),
            ),
            col_widths=(5, 7),
        ),
        value="compose",
    )


def _ledger_page(config: ServeConfig) -> Any:
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


def _wizard_page(config: ServeConfig, schema: Mapping[str, str]) -> Any:
    if not config.data:
        return ui.nav_panel("Release wizard", ui.p(
            "No data file: start the server with ", ui.tags.code("approxdp serve --data FILE"),
            " (CSV or Parquet). Files are never uploaded or chosen from the browser."),
            value="wizard")
    columns = list(schema)
    numeric = [c for c, k in schema.items() if k == "numeric"]
    units = {"": "each row (no unit column)", **{c: c for c in columns}}
    step1 = ui.card(
        ui.card_header("1. Data (files given on the command line)"),
        ui.input_select("wiz_file", "data file", {f.key: f.label for f in config.data}),
        ui.output_ui("wiz_file__error"),
        ui.output_ui("wiz_schema"),
    )
    step2 = ui.card(
        ui.card_header("2. Privacy unit: whom to protect"),
        ui.input_select("wiz_unit", "privacy unit column", units),
        ui.output_ui("wiz_unit__error"),
        ui.layout_columns(
            _field("wiz_max_partitions", "cells one unit may touch (k)", "1", on_blur=True),
            _field("wiz_max_rows", "rows per unit per cell (m)", "1", on_blur=True),
            col_widths=(6, 6),
        ),
        ui.input_select("wiz_neighbouring", "neighbouring datasets",
                        {"add-remove": "add or remove one unit",
                         "replace-one": "replace one unit"}),
    )
    is_column = "input.wiz_kind === 'sum' || input.wiz_kind === 'mean'"
    step3 = ui.card(
        ui.card_header("3. Query and budget"),
        ui.input_select("wiz_kind", "statistic", {k: k for k in wizard.KINDS},
                        selected="mean" if numeric else "count"),
        ui.panel_conditional(
            is_column,
            ui.input_select("wiz_column", "value column", {c: c for c in numeric}),
            ui.output_ui("wiz_column__error"),
            ui.layout_columns(_field("wiz_low", "lower bound", "0", on_blur=True),
                              _field("wiz_high", "upper bound", "100", on_blur=True),
                              col_widths=(6, 6)),
            ui.input_selectize("wiz_by", "group by", {c: c for c in columns}, multiple=True),
            ui.output_ui("wiz_by__error"),
        ),
        ui.panel_conditional(
            "input.wiz_kind === 'histogram'",
            ui.input_selectize("wiz_columns", "count over", {c: c for c in columns},
                               multiple=True),
            ui.output_ui("wiz_columns__error"),
        ),
        ui.panel_conditional(
            "input.wiz_kind !== 'count'",
            ui.input_text_area("wiz_domain", "public domain of grouping columns (one "
                               "COLUMN=V1,V2,... per line; none: cells chosen privately)", "",
                               rows=2, width="100%", update_on="blur"),
            ui.output_ui("wiz_domain__error"),
            ui.input_select("wiz_outside_domain", "rows outside the domain",
                            {"error": "refuse the release", "drop": "drop them"}),
        ),
        ui.layout_columns(_field("wiz_epsilon", "ε of this release", "0.5", on_blur=True),
                          _field("wiz_delta", "δ of this release", "1e-6", on_blur=True),
                          _field("wiz_level", "confidence level", "0.95", on_blur=True),
                          col_widths=(4, 4, 4)),
    )
    step4 = ui.card(
        ui.card_header("4. Simulated accuracy (spends nothing)"),
        ui.p("Runs the query on a synthetic table made from your choices only (bounds, "
             "domains, an assumed number of rows) — never on the data — with a throwaway "
             "budget. Nothing is spent; the numbers are a seeded simulation, NOT private."),
        ui.layout_columns(
            _field("wiz_rows", "assumed number of rows (a public guess)", "1000", on_blur=True),
            ui.div(ui.input_action_button("wiz_simulate", "Simulate accuracy (spends nothing)",
                                          class_="btn-secondary mt-4")),
            col_widths=(5, 7),
        ),
        ui.output_ui("wiz_simulation"),
    )
    step5 = ui.card(
        ui.card_header("5. Spend and release"),
        ui.p("First review what the release costs; the spend button appears only then, for "
             "exactly that form, and each click releases once."),
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


def _binding(config: ServeConfig) -> Tag:
    where = ("this computer only" if is_loopback(config.host)
             else "ANY computer that can reach this address (not loopback)")
    return ui.div(
        f"Served at {config.url} — bound to {config.host}, reachable from {where}. "
        f"Ledger: {config.ledger.name if config.ledger else 'none'}; data: "
        f"{', '.join(f.label for f in config.data) or 'none'} (fixed at start).",
        class_="approxdp-binding text-muted px-3", id="binding",
    )


# -- the server ----------------------------------------------------------------------------------
def _field_errors(output: Outputs, outcome: Callable[[], Outcome], ids: Sequence[str]) -> None:
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


def _ledger_stamp(path: Path) -> tuple[int, ...]:
    """Changes whenever the ledger (or its SQLite WAL) is written."""
    out: list[int] = []
    for p in (path, path.with_name(path.name + "-wal")):
        try:
            st = p.stat()
            out += [st.st_mtime_ns, st.st_size]
        except OSError:
            out += [0, 0]
    return tuple(out)


def _server(config: ServeConfig) -> Callable[[Inputs, Outputs, Session], None]:
    def server(input: Inputs, output: Outputs, session: Session) -> None:
        # ---- Calibrate ------------------------------------------------------------------
        @reactive.calc
        def calibration() -> Outcome:
            return attempt(lambda: pages.calibrate_view(
                input.cal_epsilon(), input.cal_delta(), input.cal_sensitivity(),
                input.cal_notion()), _CAL_FIELDS)

        _field_errors(output, calibration, list(_CAL_FIELDS.values()))

        @render.ui
        def cal_summary() -> TagChild:
            result = calibration()
            if not result.ok:
                return _error(result, "cal_error") if result.field is None else None
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
                    rows.append((row["method"], [row["method"], "—", "—", "—", _verdict(None),
                                                 row["reason"]]))
                    continue
                ratio = row["ratio_to_optimal"]
                note = (f"fails {word} above ε = {fmt(row['fails_above_epsilon'], 4)}"
                        if row["fails_above_epsilon"] is not None else row["source"])
                rows.append((row["method"], [
                    row["method"], fmt(row["sigma"]), "n/a" if ratio is None else f"{ratio:.4f}",
                    fmt(row["true_delta"], 4), _verdict(row["private"]), note]))
            return _table(["method", "σ", f"× {rep['reference_method']}", "true δ",
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

        # ---- Compose / DP-SGD -----------------------------------------------------------
        @reactive.calc
        def composition() -> Outcome:
            return attempt(lambda: pages.compose_view(input.cmp_releases(), input.cmp_delta()),
                           _COMPOSE_FIELDS)

        _field_errors(output, composition, list(_COMPOSE_FIELDS.values()))

        @render.ui
        def cmp_table() -> TagChild:
            result = composition()
            if not result.ok:
                return _error(result) if result.field is None else None
            rep = result.value
            rows = []
            for row in rep["rules"]:
                ratio = row["ratio_to_best"]
                how = row["description"]
                if row["per_release_delta"] is not None:
                    how += f"; each Gaussian at δ₀ = {row['per_release_delta']:.3g}"
                rows.append((row["rule"], [row["rule"], fmt(row["epsilon"]),
                                           fmt(row["delta"], 4),
                                           "n/a" if ratio is None else f"{ratio:.3f}",
                                           row["kind"], how]))
            return ui.div(
                ui.p(f"{rep['count']} releases at total δ = {rep['delta']:g}:"),
                _table(["rule", "total ε", "total δ", "× best", "kind", "how"], rows,
                       "cmp_rules"))

        @reactive.calc
        def dpsgd() -> Outcome:
            return attempt(lambda: pages.dpsgd_view(
                input.sgd_sample_rate(), input.sgd_noise_multiplier(), input.sgd_steps(),
                input.sgd_delta(), input.sgd_sampling()), _SGD_FIELDS)

        @reactive.calc
        @reactive.event(input.sgd_find)
        def noise() -> Outcome:
            return attempt(lambda: pages.noise_view(
                input.sgd_target_epsilon(), input.sgd_sample_rate(), input.sgd_steps(),
                input.sgd_delta(), input.sgd_sampling()), _NOISE_FIELDS)

        @reactive.calc
        def sgd_errors() -> Outcome:
            first = dpsgd()
            if not first.ok:
                return first
            try:
                return noise()
            except Exception:  # not clicked yet (a silent "no event")
                return first

        _field_errors(output, sgd_errors, list(_NOISE_FIELDS.values()))

        @render.ui
        def sgd_table() -> TagChild:
            result = dpsgd()
            if not result.ok:
                return _error(result) if result.field is None else None
            rows = []
            for row in result.value["accountants"]:
                bracket = row["bracket"]
                label = ("approximation: may be BELOW the true ε, never claim it"
                         if row["kind"] == "approximation" else row["kind"])
                rows.append((row["accountant"], [
                    row["accountant"], fmt(row["epsilon"], 6), label,
                    f"[{fmt(bracket[0], 4)}, {fmt(bracket[1], 4)}]" if bracket else "",
                    row["rule"]]))
            return _table(["accountant", "ε", "label", "certified bracket", "how"], rows,
                          "sgd_accountants")

        @render.plot(alt="epsilon against the number of steps")
        def sgd_curve() -> Any:
            result = dpsgd()
            req(result.ok)
            rep = result.value
            curve = pages.epsilon_curve(rep["sample_rate"], rep["noise_multiplier"],
                                        rep["steps"], rep["delta"], rep["sampling"])
            return figures.epsilon_steps_figure(curve, rep["delta"])

        @render.ui
        def sgd_noise() -> TagChild:
            result = noise()
            if not result.ok:
                return _error(result) if result.field is None else None
            rep = result.value
            return ui.p(
                f"Least noise multiplier for ε = {rep['epsilon']:g} at δ = {rep['delta']:g} "
                f"(q = {rep['sample_rate']:g}, T = {rep['steps']}): ",
                ui.tags.b(f"σ = {fmt(rep['noise_multiplier'], 6)}", id="sgd_sigma"),
                f" (certified by {rep['accountant']}, {rep['seconds']:.2f} s)")

        # ---- Ledger ---------------------------------------------------------------------
        ledger_path = config.ledger

        if ledger_path is not None:
            @reactive.poll(lambda: _ledger_stamp(ledger_path), 1.0)
            def ledger() -> Outcome:
                return attempt(lambda: pages.ledger_view(ledger_path), {})

            @render.ui
            def ledger_summary() -> TagChild:
                result = ledger()
                if not result.ok:
                    return _error(result, "ledger_error")
                view = result.value
                status = view["status"]
                return ui.div(
                    ui.p(f"Budget (ε, δ) = ({view['budget']['epsilon']:g}, "
                         f"{view['budget']['delta']:g}); composition rule: "
                         f"{view['composition']} (now: {status['rule']}); ",
                         ui.tags.b(f"{status['count']} spend(s)", id="ledger_count"), "."),
                    _budget_table(status, "ledger_status"),
                )

            @render.ui
            def ledger_spends() -> TagChild:
                result = ledger()
                req(result.ok)
                spends = result.value["spends"]
                if not spends:
                    return ui.p("No spends yet.")
                return _table(["#", "time (UTC)", "label", "event", "δ after (at total ε)"], [
                    (str(s["index"]), [str(s["index"]), s["time"], str(s["label"] or ""),
                                       s["summary"], f"{s['delta_after']:.4g}"])
                    for s in spends], "ledger_table")

            @render.plot(alt="burn-down of the ledger's budget")
            def ledger_burn() -> Any:
                result = ledger()
                req(result.ok)
                return figures.burn_down_figure(result.value)

        # ---- Release wizard -------------------------------------------------------------
        if config.data:
            _wizard_server(config, input, output)

    return server


def _wizard_form(input: Inputs) -> dict[str, object]:
    return {name: input[input_id]() for name, input_id in _WIZ_FIELDS.items()
            if name != "rows"}


def _wizard_server(config: ServeConfig, input: Inputs, output: Outputs) -> None:
    @reactive.calc
    def schema() -> Outcome:
        return attempt(lambda: wizard.schema_of(
            data_file(config, input.wiz_file())), {"file": "wiz_file"})

    @reactive.effect
    def _columns_follow_the_file() -> None:
        result = schema()
        if not result.ok:
            return
        cols = list(result.value)
        numeric = [c for c, k in result.value.items() if k == "numeric"]
        with reactive.isolate():
            ui.update_select("wiz_unit", choices={"": "each row (no unit column)",
                                                  **{c: c for c in cols}})
            ui.update_select("wiz_column", choices={c: c for c in numeric})
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
            _table(["column", "type"], [(c, [c, k]) for c, k in result.value.items()],
                   "wiz_columns_table"))

    @reactive.calc
    def spec() -> Outcome:
        shape = schema()
        if not shape.ok:
            return shape
        return attempt(lambda: wizard.read_spec(config, _wizard_form(input), shape.value),
                       _WIZ_FIELDS)

    @reactive.calc
    @reactive.event(input.wiz_simulate)
    def simulation() -> Outcome:
        current = spec()
        if not current.ok:
            return current
        return attempt(lambda: wizard.simulate(current.value, schema().value, input.wiz_rows()),
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

    _field_errors(output, form_errors, list(_WIZ_FIELDS.values()))

    @render.ui
    def wiz_simulation() -> TagChild:
        result = simulation()
        if not result.ok:
            return _error(result, "wiz_simulation_error") if result.field is None else None
        sim = result.value
        rel = sim["result"]
        return ui.div(
            ui.p("SIMULATION on synthetic data — not your data, NOT private, nothing spent",
                 class_="banner"),
            ui.p(f"{rel['label']}: {sim['rows']} assumed rows; σ = {fmt(rel['sigma'])} on the "
                 f"scaled vector, sensitivity Δ2 = {fmt(rel['sensitivity']['l2'])}. The noise "
                 "and interval widths are what to expect; the values mean nothing."),
            _cells_table(rel, "wiz_simulated_cells", simulated=True),
            class_="approxdp-simulation", id="wiz_simulation_box",
        )

    reviewed: reactive.Value[tuple[wizard.ReleaseSpec, dict[str, Any]] | None] = (
        reactive.value(None))
    review_error: reactive.Value[Outcome | None] = reactive.value(None)
    released: reactive.Value[Outcome | None] = reactive.value(None)
    released_spec: reactive.Value[wizard.ReleaseSpec | None] = reactive.value(None)

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
        preview = attempt(lambda: wizard.cost_preview(current.value, ledger), {})
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
            return _error(problem, "wiz_cost_error") if problem.field is None else ui.div(
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
            ui.h6("This release will spend"),
            ui.p(ui.tags.b(f"ε = {cost['epsilon']:g}, δ = {cost['delta']:g}", id="wiz_price"),
                 f" from ledger {Path(cost['ledger']).name} (rule: {cost['composition']})."),
            _table(["", "remaining ε", "remaining δ"], [
                ("now", ["now", fmt(cost["now"]["remaining_epsilon"]),
                         fmt(cost["now"]["remaining_delta"])]),
                ("after", ["after, at most (as an (ε, δ) step)",
                           fmt(cost["after"]["remaining_epsilon"]),
                           fmt(cost["after"]["remaining_delta"])]),
            ], "wiz_cost_table"),
            ui.input_action_button("wiz_spend", spend_label, class_="btn-danger",
                                   disabled=not fits) if fits else
            ui.div("It does not fit in what is left: nothing can be spent.",
                   class_="approxdp-error"),
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
        released.set(attempt(lambda: wizard.release(pending[0], schema().value, ledger), {}))
        released_spec.set(pending[0])

    @render.ui
    def wiz_released() -> TagChild:
        result = released.get()
        if result is None:
            return None
        if not result.ok:
            return _error(result, "wiz_release_error")
        data = result.value
        rel = data["result"]
        status = data["budget"]
        return ui.div(
            ui.h5(f"Released: {rel['label']} (private, secure noise)"),
            _cells_table(rel, "wiz_released_cells", simulated=False),
            ui.p(f"Ledger now: {status['count']} spend(s); remaining ε = "
                 f"{fmt(status['remaining_epsilon'])}, δ = {fmt(status['remaining_delta'])}."),
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
        yield wizard.release_json(_done())

    @render.download_button(filename=lambda: f"{_stem()}.csv", media_type="text/csv")
    def wiz_download_csv() -> Any:
        yield wizard.release_csv(_done())

    @render.download_button(filename=lambda: f"{_stem()}.py", media_type="text/x-python")
    def wiz_download_script() -> Any:
        _done()
        made = released_spec.get()
        req(made is not None)
        assert made is not None
        yield wizard.release_script(made, schema().value, config.ledger)


def build_app(config: ServeConfig) -> App:
    """The Shiny app for ``config`` (nothing is served until it is run, e.g. by uvicorn)."""
    schema: Mapping[str, str] = {}
    if config.data:
        try:
            schema = wizard.schema_of(config.data[0])
        except ApproxDPError:
            schema = {}  # the page shows the error once the file is chosen
    page = ui.page_navbar(
        _calibrate_page(),
        _compose_page(),
        _ledger_page(config),
        _wizard_page(config, schema),
        title="approxdp",
        id="page",
        header=ui.div(ui.tags.style(_CSS), _binding(config)),
        window_title="approxdp explorer",
    )
    app = App(page, _server(config))
    app.sanitize_errors = True  # an error that escapes every handler shows no details
    return app

