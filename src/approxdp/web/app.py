"""The Shiny for Python app of ``approxdp serve``: the four pages of :mod:`approxdp.web.pages`
under one navigation bar, with a header that says where the server is bound.

Every output that can fail renders the error as ONE line (the API's error type and message,
:func:`~approxdp.web.forms.error_text`) under the field it is about, or at the top of its
step; Shiny never shows a traceback (and the app sanitizes any error that escapes). The only
action that spends privacy budget is the wizard's "Spend and release" button
(:mod:`approxdp.web.pages.wizard`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from htmltools import Tag
from shiny import App, Inputs, Outputs, Session, ui

from approxdp.errors import ApproxDPError
from approxdp.web.config import ServeConfig, is_loopback
from approxdp.web.pages import calibrate, compose, ledger, wizard
from approxdp.web.widgets import CSS
from approxdp.web.wizard_steps import schema_of

__all__ = ["build_app"]


def _binding(config: ServeConfig) -> Tag:
    where = ("this computer only" if is_loopback(config.host)
             else "ANY computer that can reach this address (not loopback)")
    return ui.div(
        f"Served at {config.url} — bound to {config.host}, reachable from {where}. "
        f"Ledger: {config.ledger.name if config.ledger else 'none'}; data: "
        f"{', '.join(f.label for f in config.data) or 'none'} (fixed at start).",
        class_="approxdp-binding text-muted px-3", id="binding",
    )


def _server(config: ServeConfig) -> Callable[[Inputs, Outputs, Session], None]:
    def server(input: Inputs, output: Outputs, session: Session) -> None:
        calibrate.server(input, output)
        compose.server(input, output)
        if config.ledger is not None:
            ledger.server(config.ledger)
        if config.data:
            wizard.server(config, input, output)

    return server


def build_app(config: ServeConfig) -> App:
    """The Shiny app for ``config`` (nothing is served until it is run, e.g. by uvicorn)."""
    schema: Mapping[str, str] = {}
    if config.data:
        try:
            schema = schema_of(config.data[0])
        except ApproxDPError:
            schema = {}  # the page shows the error once the file is chosen
    page = ui.page_navbar(
        calibrate.panel(),
        compose.panel(),
        ledger.panel(config),
        wizard.panel(config, schema),
        title="approxdp",
        id="page",
        header=ui.div(ui.tags.style(CSS), _binding(config)),
        window_title="approxdp explorer",
    )
    app = App(page, _server(config))
    app.sanitize_errors = True  # an error that escapes every handler shows no details
    return app
