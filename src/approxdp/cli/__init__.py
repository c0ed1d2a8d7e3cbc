"""The ``approxdp`` command line (minimal for now: ``demo`` and ``calibrate``; issue 7 grows it)."""

from __future__ import annotations

import argparse
import sys

from approxdp.calibration import CALIBRATION_METHODS, calibrate_gaussian
from approxdp.errors import ApproxDPError
from approxdp.profiles.gaussian import gaussian_delta

__all__ = ["calibration_table", "run_cli"]


def calibration_table(epsilon: float, delta: float, sensitivity: float) -> str:
    """σ of every method at (ε, δ, Δ), whether it is really (ε, δ)-DP, and its excess noise."""
    import warnings

    from approxdp.errors import NotPrivateWarning

    opt = calibrate_gaussian(epsilon, delta, sensitivity)
    lines = [
        f"Gaussian noise for ({epsilon:g}, {delta:g})-DP, sensitivity {sensitivity:g}",
        f"{'method':<17}{'sigma':>14}{'vs optimal':>12}  {'true delta':>12}  private?",
    ]
    for name, m in CALIBRATION_METHODS.items():
        if epsilon == 0 and name != "optimal":
            continue
        if delta >= m.delta_below:
            lines.append(f"{name:<17}{'undefined for this delta':>40}")
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotPrivateWarning)
            s = calibrate_gaussian(epsilon, delta, sensitivity, method=name, allow_non_private=True)
        true = gaussian_delta(epsilon, s, sensitivity)
        ok = "yes" if true <= delta else "NO"
        lines.append(f"{name:<17}{s:>14.6g}{s / opt:>11.4f}x  {true:>12.4g}  {ok}")
    return "\n".join(lines)


def run_cli(argv: list[str]) -> int:
    """Parse ``argv`` and run; errors print as one line with exit code 2."""
    parser = argparse.ArgumentParser(prog="approxdp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, helptext in (
        ("demo", "the main job: calibration table and private releases on the Adult data"),
        ("calibrate", "sigma under every calibration method"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--epsilon", type=float, default=1.0)
        p.add_argument("--delta", type=float, default=1e-6)
        p.add_argument("--sensitivity", type=float, default=1.0)
        if name == "demo":
            p.add_argument("--no-releases", action="store_true", help="only the table")
    args = parser.parse_args(argv)
    try:
        print(calibration_table(args.epsilon, args.delta, args.sensitivity))
        if args.command == "demo" and not args.no_releases:
            from approxdp.releases.demo import run_adult_demo

            print()
            print(run_adult_demo(epsilon=args.epsilon, delta=args.delta))
    except ApproxDPError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
