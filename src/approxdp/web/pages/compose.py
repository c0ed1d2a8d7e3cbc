"""The Compose / DP-SGD page: the total privacy of releases under every composition rule (the
report of ``approxdp compose``), a DP-SGD run under every accountant and ε against the steps
(``approxdp dpsgd``), and the noise multiplier for a target ε."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
from htmltools import TagChild
from shiny import Inputs, Outputs, reactive, render, req, ui

from approxdp.accounting import DPSGD_ACCOUNTANTS
from approxdp.accounting.dpsgd.accountants import dpsgd_epsilon
from approxdp.errors import ApproxDPError, InvalidParameterError
from approxdp.events import SAMPLINGS
from approxdp.reports.composition import composition_report, parse_release
from approxdp.reports.dpsgd import dpsgd_report
from approxdp.reports.formatting import fmt
from approxdp.web import figures
from approxdp.web.forms import Outcome, attempt, choice, integer, on_field, parameter
from approxdp.web.widgets import error_box, field_errors, table, text_field

__all__ = [
    "COMPOSE_FIELDS",
    "NOISE_FIELDS",
    "SGD_FIELDS",
    "compose_view",
    "dpsgd_view",
    "epsilon_curve",
    "noise_view",
    "panel",
    "server",
]

#: API parameter name → input id of the page's fields (composition, DP-SGD, noise search).
COMPOSE_FIELDS = {"releases": "cmp_releases", "delta": "cmp_delta"}
SGD_FIELDS = {"sample_rate": "sgd_sample_rate", "noise_multiplier": "sgd_noise_multiplier",
               "steps": "sgd_steps", "delta": "sgd_delta", "sampling": "sgd_sampling"}
NOISE_FIELDS = {**SGD_FIELDS, "target_epsilon": "sgd_target_epsilon"}


def compose_view(releases: object, delta: object) -> dict[str, Any]:
    """``approxdp compose``'s report: releases written as the command's tokens (one per line,
    or separated by spaces or commas), total ε at total δ under each rule."""
    tokens = [t for t in re.split(r"[\s,;]+", str(releases or "")) if t]
    with on_field("releases"):
        if not tokens:
            raise InvalidParameterError("give at least one release, e.g. 10xgaussian:4")
        parsed = [parse_release(t) for t in tokens]
    dlt = parameter("delta", delta)
    return composition_report(parsed, dlt)


def _run(sample_rate: object, steps: object, delta: object, sampling: object,
         ) -> tuple[float, int, float, str]:
    q = parameter("sample_rate", sample_rate)
    t = integer("steps", steps, 1, 10**12)
    d = parameter("delta", delta)
    return q, t, d, choice("sampling", sampling, SAMPLINGS)


def dpsgd_view(
    sample_rate: object, noise_multiplier: object, steps: object, delta: object,
    sampling: object = "poisson",
) -> dict[str, Any]:
    """``approxdp dpsgd``'s report: ε of T steps under every accountant, each labelled."""
    q, t, d, how = _run(sample_rate, steps, delta, sampling)
    sigma = parameter("noise_multiplier", noise_multiplier, "sigma")
    return dpsgd_report(sample_rate=q, steps=t, delta=d, sampling=how,
                        noise_multiplier=sigma, epsilon=None)


def noise_view(
    target_epsilon: object, sample_rate: object, steps: object, delta: object,
    sampling: object = "poisson",
) -> dict[str, Any]:
    """``approxdp dpsgd --epsilon``: the least noise multiplier the PLD accountant certifies."""
    q, t, d, how = _run(sample_rate, steps, delta, sampling)
    eps = parameter("target_epsilon", target_epsilon, "epsilon_positive")
    with on_field("target_epsilon"):
        return dpsgd_report(sample_rate=q, steps=t, delta=d, sampling=how,
                            noise_multiplier=None, epsilon=eps)


def epsilon_curve(
    sample_rate: float, noise_multiplier: float, steps: int, delta: float,
    sampling: str = "poisson", points: int = 8,
) -> dict[str, Any]:
    """ε against the number of steps (log-spaced from 1 to ``steps``) under every accountant;
    NaN where an accountant has no answer."""
    grid = np.unique(np.round(np.geomspace(1, max(steps, 1), points)).astype(np.int64))
    curves: dict[str, list[float]] = {}
    for name in DPSGD_ACCOUNTANTS:
        values = []
        for t in grid:
            try:
                g = dpsgd_epsilon(noise_multiplier=noise_multiplier, sample_rate=sample_rate,
                                  steps=int(t), delta=delta, sampling=sampling, accountant=name)
                values.append(float(g.epsilon))
            except ApproxDPError:
                values.append(math.nan)
        curves[name] = values
    return {"steps": [int(t) for t in grid], "epsilon": curves}


def panel() -> Any:
    """The page's layout: composition on the left, DP-SGD on the right."""
    return ui.nav_panel(
        "Compose / DP-SGD",
        ui.layout_columns(
            ui.card(
                ui.card_header("Compose releases"),
                ui.input_text_area("cmp_releases", "releases (one per line: [Kx]gaussian:σ[:Δ], "
                                   "[Kx]laplace:b[:Δ], [Kx]dp:ε[:δ])",
                                   "100xgaussian:20\nlaplace:10", rows=4, width="100%"),
                ui.output_ui("cmp_releases__error"),
                text_field("cmp_delta", "total δ", "1e-5"),
                ui.output_ui("cmp_table"),
            ),
            ui.card(
                ui.card_header("DP-SGD: (q, σ, T) → ε under every accountant"),
                ui.layout_columns(
                    text_field("sgd_sample_rate", "sampling rate q", "0.01"),
                    text_field("sgd_noise_multiplier", "noise multiplier σ", "1.1"),
                    text_field("sgd_steps", "steps T", "1000"),
                    text_field("sgd_delta", "δ", "1e-5"),
                    col_widths=(3, 3, 3, 3),
                ),
                ui.input_select("sgd_sampling", "sampling", {s: s for s in SAMPLINGS}),
                ui.output_ui("sgd_table"),
                ui.output_plot("sgd_curve", height="330px"),
                ui.hr(),
                ui.h6("Noise multiplier for a target ε (certified by the PLD accountant)"),
                ui.layout_columns(
                    text_field("sgd_target_epsilon", "target ε", "2"),
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


def server(input: Inputs, output: Outputs) -> None:
    """The page's outputs."""
    @reactive.calc
    def composition() -> Outcome:
        return attempt(lambda: compose_view(input.cmp_releases(), input.cmp_delta()),
                       COMPOSE_FIELDS)

    field_errors(output, composition, list(COMPOSE_FIELDS.values()))

    @render.ui
    def cmp_table() -> TagChild:
        result = composition()
        if not result.ok:
            return error_box(result) if result.field is None else None
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
            table(["rule", "total ε", "total δ", "× best", "kind", "how"], rows,
                   "cmp_rules"))

    @reactive.calc
    def dpsgd() -> Outcome:
        return attempt(lambda: dpsgd_view(
            input.sgd_sample_rate(), input.sgd_noise_multiplier(), input.sgd_steps(),
            input.sgd_delta(), input.sgd_sampling()), SGD_FIELDS)

    @reactive.calc
    @reactive.event(input.sgd_find)
    def noise() -> Outcome:
        return attempt(lambda: noise_view(
            input.sgd_target_epsilon(), input.sgd_sample_rate(), input.sgd_steps(),
            input.sgd_delta(), input.sgd_sampling()), NOISE_FIELDS)

    @reactive.calc
    def sgd_errors() -> Outcome:
        first = dpsgd()
        if not first.ok:
            return first
        try:
            return noise()
        except Exception:  # not clicked yet (a silent "no event")
            return first

    field_errors(output, sgd_errors, list(NOISE_FIELDS.values()))

    @render.ui
    def sgd_table() -> TagChild:
        result = dpsgd()
        if not result.ok:
            return error_box(result) if result.field is None else None
        rows = []
        for row in result.value["accountants"]:
            bracket = row["bracket"]
            label = ("approximation: may be BELOW the true ε, never claim it"
                     if row["kind"] == "approximation" else row["kind"])
            rows.append((row["accountant"], [
                row["accountant"], fmt(row["epsilon"], 6), label,
                f"[{fmt(bracket[0], 4)}, {fmt(bracket[1], 4)}]" if bracket else "",
                row["rule"]]))
        return table(["accountant", "ε", "label", "certified bracket", "how"], rows,
                      "sgd_accountants")

    @render.plot(alt="epsilon against the number of steps")
    def sgd_curve() -> Any:
        result = dpsgd()
        req(result.ok)
        rep = result.value
        curve = epsilon_curve(rep["sample_rate"], rep["noise_multiplier"],
                                    rep["steps"], rep["delta"], rep["sampling"])
        return figures.epsilon_steps_figure(curve, rep["delta"])

    @render.ui
    def sgd_noise() -> TagChild:
        result = noise()
        if not result.ok:
            return error_box(result) if result.field is None else None
        rep = result.value
        return ui.p(
            f"Least noise multiplier for ε = {rep['epsilon']:g} at δ = {rep['delta']:g} "
            f"(q = {rep['sample_rate']:g}, T = {rep['steps']}): ",
            ui.tags.b(f"σ = {fmt(rep['noise_multiplier'], 6)}", id="sgd_sigma"),
            f" (certified by {rep['accountant']}, {rep['seconds']:.2f} s)")
