"""``python -m approxdp``: the command-line entry point."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the approxdp command line (a Click application, imported lazily)."""
    from approxdp.cli import run_cli

    return int(run_cli(argv if argv is not None else sys.argv[1:]))


if __name__ == "__main__":
    sys.exit(main())
