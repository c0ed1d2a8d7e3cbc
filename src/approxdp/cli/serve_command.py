"""``approxdp serve``: the explorer and release wizard in a local web browser.

Binds 127.0.0.1 by default, so only this computer can reach it; any other address needs
``--allow-remote`` and prints a warning. The ledger and the data files are fixed here, on the
command line: the browser can neither upload a file nor name a path. The app itself is
:mod:`approxdp.web` (Shiny for Python, imported only when the command runs).
"""

from __future__ import annotations

from pathlib import Path

import click

from approxdp.accounting import COMPOSITION_RULES
from approxdp.cli.output import Number, error_line
from approxdp.errors import MissingDependencyError
from approxdp.web.config import is_loopback, make_config

__all__ = ["serve_command"]


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback (127.0.0.1, ::1, localhost) also "
                   "needs --allow-remote.")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True,
              help="TCP port.")
@click.option("--allow-remote", is_flag=True,
              help="Allow a --host that other computers can reach (prints a warning): anyone "
                   "who reaches it can read the ledger and spend its budget.")
@click.option("--ledger", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="SQLite ledger the Ledger page shows and the release wizard spends through "
                   "(created if absent, which needs --budget).")
@click.option("--budget", type=(Number.of("epsilon"), Number.of("delta_cost")),
              default=None, metavar="EPSILON DELTA",
              help="Total budget of a new --ledger (an existing one keeps its own).")
@click.option("--composition", type=click.Choice(list(COMPOSITION_RULES)), default=None,
              help="Composition rule of a new --ledger (default: auto).")
@click.option("--data", "data", multiple=True, metavar="FILE",
              type=click.Path(path_type=Path, dir_okay=False),
              help="CSV or Parquet file the release wizard may read (repeatable).")
def serve_command(
    host: str, port: int, allow_remote: bool, ledger: Path | None,
    budget: tuple[float, float] | None, composition: str | None, data: tuple[Path, ...],
) -> None:
    """Open the explorer and release wizard in a browser (a local web app).

    Pages: Calibrate (every method's σ, the privacy profile, the classical formulas' failure
    region), Compose / DP-SGD, Ledger (read-only) and the Release wizard (simulate first,
    spend only on an explicit click). Stop it with Ctrl+C.

    Example: approxdp serve --ledger budget.sqlite --budget 2 1e-5 --data people.csv
    """
    config = make_config(host=host, port=port, allow_remote=allow_remote, ledger=ledger,
                         budget=budget, composition=composition, data=data)
    try:
        import uvicorn

        from approxdp.web.app import build_app
        from approxdp.web.guard import guard
    except ImportError as exc:
        raise MissingDependencyError(
            f"approxdp serve needs Shiny for Python ({exc.name or exc}): "
            "pip install 'approxdp[web]'"
        ) from exc
    app = guard(build_app(config), config)  # only the app's own pages: Host/Origin checked
    if is_loopback(config.host):
        where = f"bound to {config.host}: reachable from this computer only"
    else:
        where = f"bound to {config.host}"
        error_line(f"--host {config.host} is not a loopback address: every computer that can "
                   "reach it can open the app, read the ledger and spend its budget",
                   prefix="warning")
    click.echo(f"approxdp serve: open {config.url} ({where}); Ctrl+C stops it", err=True)
    if config.ledger is not None:
        click.echo(f"  ledger: {config.ledger}", err=True)
    for file in config.data:
        click.echo(f"  data: {file.path}", err=True)
    uvicorn.run(app, host=config.host, port=config.port, log_level="warning")
