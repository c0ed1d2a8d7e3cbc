"""The ``approxdp`` Click application: the group, its error handling, and command registration.

Every failure ends as ONE line ``error: <message>`` on stderr and a non-zero exit status (the
library's Python spellings reworded into options, :func:`~approxdp.cli.output.cli_wording`):
2 for bad input (Click usage errors, :class:`~approxdp.errors.ApproxDPError`, unreadable
files), 3 when a privacy budget would be exceeded, 1 for an unexpected bug (``--debug`` shows
its traceback). Warnings print as one line ``warning: <message>``.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import click

from approxdp._version import __version__
from approxdp.cli.calibration_commands import calibrate_command, epsilon_command, profile_command
from approxdp.cli.composition_commands import compose_command
from approxdp.cli.demo_command import demo_command
from approxdp.cli.dpsgd_command import dpsgd_command
from approxdp.cli.figures import plot_command, reproduce_command
from approxdp.cli.ledger_commands import ledger_command
from approxdp.cli.output import (
    EXIT_BAD_INPUT,
    EXIT_BUDGET_EXCEEDED,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    Interrupted,
    cli_wording,
    error_line,
)
from approxdp.cli.plan_command import plan_command
from approxdp.cli.release_commands import release_command
from approxdp.cli.serve_command import serve_command
from approxdp.errors import ApproxDPError, BudgetExceededError

__all__ = ["ApproxDPGroup", "CliState", "cli"]


# Click >= 8.2 signals "no arguments: show the help" with this UsageError subclass.
class _NeverRaisedError(Exception):
    pass


_NO_ARGS_IS_HELP: type[Exception] = getattr(
    click.exceptions, "NoArgsIsHelpError", _NeverRaisedError
)


@dataclass
class CliState:
    """The state of one invocation, kept as Click's context object (``ctx.obj``)."""

    debug: bool = False  # ``--debug``: let exceptions through with their tracebacks


class ApproxDPGroup(click.Group):
    """A Click group whose errors are one line on stderr with a meaningful exit status."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the application; with ``standalone_mode`` exit the process with its status.

        Each invocation gets a fresh :class:`CliState` as Click's context object, which
        ``--debug`` sets and the error handling reads once the command has ended.
        """
        state = CliState()
        code = _guarded(
            lambda: super(ApproxDPGroup, self).main(
                args, prog_name or "approxdp", complete_var, standalone_mode=False,
                obj=state, **extra,
            ),
            state,
        )
        if standalone_mode:
            sys.exit(code)
        return code


def _show_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int,
    file: TextIO | None = None, line: str | None = None,
) -> None:
    error_line(cli_wording(str(message)), prefix="warning")


def _guarded(run: Callable[[], Any], state: CliState) -> int:
    """Call ``run`` and turn its outcome into an exit status, printing errors as one line."""
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            result = run()
        except Interrupted as exc:
            error_line(str(exc))
            return EXIT_INTERRUPTED
        except click.exceptions.Abort as exc:
            if isinstance(exc.__cause__, KeyboardInterrupt):  # Ctrl+C outside a release
                error_line("interrupted")
                return EXIT_INTERRUPTED
            error_line("aborted")
            return EXIT_INTERNAL
        except click.ClickException as exc:  # usage errors, bad option values, missing args
            where = ""
            ctx = getattr(exc, "ctx", None)
            if isinstance(exc, _NO_ARGS_IS_HELP) and ctx is not None:
                click.echo(ctx.get_help())  # a bare ``approxdp``: show the help, not an error
                return 0
            if isinstance(exc, click.UsageError) and ctx is not None:
                where = f" (see '{ctx.command_path} --help')"
            error_line(exc.format_message() + where)
            return EXIT_BAD_INPUT if exc.exit_code in (1, 2) else int(exc.exit_code)
        except BudgetExceededError as exc:
            if state.debug:
                raise
            error_line(f"privacy budget exceeded, nothing was spent: {cli_wording(str(exc))}")
            return EXIT_BUDGET_EXCEEDED
        except ApproxDPError as exc:
            if state.debug:
                raise
            error_line(cli_wording(str(exc)))
            return EXIT_BAD_INPUT
        except OSError as exc:
            if state.debug:
                raise
            where = f": {exc.filename}" if exc.filename else ""
            error_line(f"{exc.strerror or exc}{where}")
            return EXIT_BAD_INPUT
        except Exception as exc:
            if state.debug:
                raise
            error_line(
                f"internal error ({type(exc).__name__}: {exc}); rerun with 'approxdp --debug "
                "...' for the traceback and please report it"
            )
            return EXIT_INTERNAL
    return result if isinstance(result, int) and not isinstance(result, bool) else 0


def _set_debug(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value:
        ctx.ensure_object(CliState).debug = True
    return value


@click.group(
    "approxdp",
    cls=ApproxDPGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "--version", prog_name="approxdp")
@click.option(
    "--debug", is_flag=True, expose_value=False, is_eager=True, callback=_set_debug,
    help="Show Python tracebacks instead of one-line errors.",
)
def cli() -> None:
    """approxdp: exactly calibrated Gaussian noise for (ε, δ)-differential privacy.

    How much noise do I need? `approxdp calibrate -e 1 -d 1e-5`. What does this σ give?
    `approxdp profile --sigma 4` and `approxdp epsilon --sigma 4 -d 1e-6`. Release private
    statistics from a CSV/Parquet file with `approxdp release`, keep the budget in a ledger
    file and inspect it with `approxdp ledger`; `approxdp serve` opens all of it in a
    browser. Every command except serve takes --json.

    Exit status: 0 ok, 2 bad input, 3 privacy budget exceeded, 4 serve's port in use, 5 ledger
    verification failed, 130 interrupted (Ctrl+C), 1 internal error.
    """


for _command in (
    calibrate_command,
    profile_command,
    epsilon_command,
    compose_command,
    dpsgd_command,
    release_command,
    plan_command,
    ledger_command,
    demo_command,
    plot_command,
    reproduce_command,
    serve_command,
):
    cli.add_command(_command)

