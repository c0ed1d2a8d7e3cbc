"""``approxdp serve``: the explorer and release wizard in a local web browser.

Binds 127.0.0.1 by default, so only this computer can reach it; any other address needs
``--allow-remote`` and prints a warning. Each start makes a secret token, printed in the URL to
open (as Jupyter does); every request must carry it (:mod:`approxdp.web.guard`), so other users
and programs of this computer cannot use the app; ``--no-token`` turns it off, with a warning.
The port is bound before the URL is printed: a port in use is a one-line error with exit
status 4 (:data:`~approxdp.cli.output.EXIT_PORT_IN_USE`). The ledger and the data files are
fixed here, on the command line: the browser can neither upload a file nor name a path. The
app itself is :mod:`approxdp.web` (Shiny for Python, imported only when the command runs).
"""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import click

from approxdp.accounting import COMPOSITION_RULES
from approxdp.cli.ledger_settings import LedgerOptions, creation_options
from approxdp.cli.output import EXIT_PORT_IN_USE, Number, error_line
from approxdp.errors import MissingDependencyError
from approxdp.web.config import is_loopback, make_config, new_token

__all__ = ["PortInUseError", "bind_port", "serve_command"]


class PortInUseError(click.ClickException):
    """The port ``approxdp serve`` should bind is taken (exit status 4, not 3: nothing to do
    with the budget)."""

    exit_code = EXIT_PORT_IN_USE


def bind_port(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (bound here, before the URL is printed, and
    handed to the server: no other program can take the port in between).

    Raises:
        PortInUseError: another program listens on that port.
        OSError: any other failure to bind (a port below 1024 without the right, an address
            this computer does not have).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            other = port + 1 if port < 65535 else 8000
            raise PortInUseError(
                f"port {port} on {host} is in use by another program (another approxdp "
                f"serve?): choose another with --port (e.g. --port {other}); nothing was "
                "started"
            ) from exc
        raise
    return sock


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
@creation_options
@click.option("--data", "data", multiple=True, metavar="FILE",
              type=click.Path(path_type=Path, dir_okay=False),
              help="CSV or Parquet file the release wizard may read (repeatable).")
@click.option("--no-token", is_flag=True,
              help="Serve without the secret token of the printed URL (prints a warning): any "
                   "user or program of this computer can then open the app, read the ledger "
                   "and spend its budget.")
def serve_command(
    host: str, port: int, allow_remote: bool, ledger: Path | None,
    budget: tuple[float, float] | None, composition: str | None, data: tuple[Path, ...],
    no_token: bool, shares: LedgerOptions,
) -> None:
    """Open the explorer and release wizard in a browser (a local web app).

    Pages: Calibrate (every method's σ, the privacy profile, the classical formulas' failure
    region), Compose / DP-SGD, Ledger (read-only) and the Release wizard (simulate first,
    spend only on an explicit click). Open the printed URL: it carries a secret token made at
    each start, without which the server answers nothing. Stop it with Ctrl+C.

    Exit status 4: the port is in use (choose another with --port).

    \b
    Examples:
      approxdp serve --ledger budget.sqlite --budget 2 1e-5 --data people.csv
      approxdp serve --ledger shared.sqlite --budget 8 1e-5 --rdp-share 6 5e-6 \\
          --data people.csv    (a ledger a DP-SGD job also spends from)
    """
    config = make_config(host=host, port=port, allow_remote=allow_remote, ledger=ledger,
                         budget=budget, composition=composition, data=data,
                         token=None if no_token else new_token(),
                         basic_share=shares.basic_share, rdp_share=shares.rdp_share,
                         rdp_orders=shares.rdp_orders, sub_budgets=shares.sub_budgets)
    try:
        import uvicorn

        from approxdp.web.app import build_app
        from approxdp.web.guard import guard
    except ImportError as exc:
        raise MissingDependencyError(
            f"approxdp serve needs Shiny for Python ({exc.name or exc}): "
            "pip install 'approxdp[web]'"
        ) from exc
    app = guard(build_app(config), config)  # only the app's own pages, with the token
    sock = bind_port(config.host, config.port)  # a busy port: exit 4, before any URL is shown
    if is_loopback(config.host):
        where = f"bound to {config.host}: reachable from this computer only"
    else:
        where = f"bound to {config.host}"
        error_line(f"--host {config.host} is not a loopback address: every computer that can "
                   "reach it can open the app, read the ledger and spend its budget",
                   prefix="warning")
    if config.token is None:
        error_line("--no-token: every user and program of this computer can open the app, "
                   "read the ledger and spend its budget", prefix="warning")
    click.echo(f"approxdp serve: open {config.open_url} ({where}); Ctrl+C stops it", err=True)
    if config.ledger is not None:
        click.echo(f"  ledger: {config.ledger}", err=True)
    for file in config.data:
        click.echo(f"  data: {file.path}", err=True)
    server = uvicorn.Server(uvicorn.Config(app, host=config.host, port=config.port,
                                           log_level="warning"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
