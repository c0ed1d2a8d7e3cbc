"""The ``approxdp`` command line: a Click application with Rich output (:mod:`.app`).

Commands live in modules by concept (:mod:`.calibration_commands`, :mod:`.composition_commands`,
:mod:`.release_commands`, :mod:`.demo_command`); :mod:`.output` holds the conventions every
command follows (tables or ``--json``, one-line errors, progress bars). ``import approxdp``
never imports this package, so Click and Rich load only when the command line runs.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["run_cli"]


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``) and return the exit status.

    Never raises for bad input: errors print as one line ``error: <message>`` on stderr.
    """
    from approxdp.cli.app import cli

    return int(cli.main(args=list(argv) if argv is not None else None, prog_name="approxdp",
                        standalone_mode=False))
