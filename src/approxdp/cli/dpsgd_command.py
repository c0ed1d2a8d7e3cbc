"""``approxdp dpsgd``: a DP-SGD run's ε under every accountant, its δ, or the noise for a target.

- ``--noise-multiplier S`` (repeatable): ε at each ``-d`` δ (repeatable) under each accountant,
  with its kind (exact, upper bound, approximation) and the time it took; the PLD row carries
  its certified bracket. With ``--at-epsilon E`` (repeatable) instead of ``-d``: δ at ε.
- ``--phase S Q T`` (repeatable): a schedule, phases of T steps at noise S and sampling rate Q,
  accounted as one run (PLD, RDP, GDP-CLT).
- ``--epsilon E`` (repeatable): the least noise multiplier whose certified (PLD) ε is ≤ E, at
  each δ.

A single run is given either as ``--sample-rate Q --steps T`` or as ``--batch-size B
--dataset-size N --epochs K`` (q = B/N, T = ⌈K·N/B⌉). An option that takes one value and is
given twice is an error, never "the last one wins".
"""
from __future__ import annotations

import math
from typing import Any, TypeVar

import click
from rich.console import Console

from approxdp.accounting.dpsgd.accountants import DPSGD_ACCOUNTANTS
from approxdp.cli.output import Number, emit, fmt, json_option, new_table, progress
from approxdp.errors import InvalidParameterError
from approxdp.events import SAMPLINGS
from approxdp.reports.dpsgd import dpsgd_reports

__all__ = ["dpsgd_command", "resolve_run"]

T = TypeVar("T")

_SIGMA = Number(0, math.inf, min_open=True, max_open=True)
_RATE = Number(0, 1, min_open=True)
_DELTA = Number(0, 1, min_open=True, max_open=True)
_TARGET = Number(0, math.inf, min_open=True, max_open=True)
_AT_EPSILON = Number(0, math.inf, max_open=True)
_STEPS = click.IntRange(1, 10**12)


def resolve_run(
    sample_rate: float | None,
    steps: int | None,
    batch_size: int | None,
    dataset_size: int | None,
    epochs: float | None,
) -> tuple[float, int, str]:
    """(q, T, how it was given) from either form of the options; a typed error otherwise."""
    direct = sample_rate is not None or steps is not None
    derived = batch_size is not None or dataset_size is not None or epochs is not None
    if direct and derived:
        raise InvalidParameterError(
            "give either --sample-rate and --steps, or --batch-size, --dataset-size and "
            "--epochs, not both"
        )
    if derived:
        if batch_size is None or dataset_size is None or epochs is None:
            raise InvalidParameterError(
                "--batch-size, --dataset-size and --epochs go together (all three are needed)"
            )
        if not 1 <= batch_size <= dataset_size:
            raise InvalidParameterError(
                f"--batch-size must be in [1, --dataset-size={dataset_size}], "
                f"got --batch-size {batch_size}"
            )
        if not (math.isfinite(epochs) and epochs > 0):
            raise InvalidParameterError(f"--epochs must be > 0, got --epochs {epochs:g}")
        q = batch_size / dataset_size
        t = max(1, math.ceil(epochs * dataset_size / batch_size))
        return q, t, f"{batch_size}/{dataset_size} per step, {epochs:g} epochs"
    if sample_rate is None or steps is None:
        raise InvalidParameterError(
            "give --sample-rate and --steps (or --batch-size, --dataset-size and --epochs)"
        )
    return sample_rate, steps, "given"


def _run_line(data: dict[str, Any], how: str) -> str:
    if data["phases"]:
        n = len(data["phases"])
        return (f"{n} phase{'s' if n > 1 else ''}, T = {data['steps']} in all, "
                f"{data['sampling']} sampling")
    return (f"q = {fmt(data['sample_rate'], 6)}, T = {data['steps']} ({how}), "
            f"{data['sampling']} sampling")


def _render(console: Console, data: dict[str, Any], how: str) -> None:
    run = _run_line(data, how)
    if data["phases"]:
        phases = new_table(title="Schedule")
        for col in ("phase", "noise multiplier σ", "sample rate q", "steps"):
            phases.add_column(col, justify="right")
        for i, p in enumerate(data["phases"], 1):
            phases.add_row(str(i), fmt(p["noise_multiplier"], 6), fmt(p["sample_rate"], 6),
                           str(p["steps"]))
        console.print(phases)
    if data["mode"] == "noise-multiplier":
        table = new_table(title="Least noise multiplier", caption=(
            f"{run}; certified by the PLD accountant"))
        for col in ("ε", "δ", "noise multiplier σ", "time"):
            table.add_column(col, justify="right")
        for r in data["results"]:
            table.add_row(fmt(r["epsilon"], 6), f"{r['delta']:g}",
                          fmt(r["noise_multiplier"], 6), f"{r['seconds']:.2f} s")
        console.print(table)
        return
    solved = "epsilon" if data["mode"] == "epsilon" else "delta"
    given = "delta" if solved == "epsilon" else "epsilon"
    sigmas = {r["noise_multiplier"] for r in data["results"]}
    title = ("DP-SGD schedule" if data["phases"] else
             f"DP-SGD with noise multiplier σ = {data['results'][0]['noise_multiplier']:g}"
             if len(sigmas) == 1 else "DP-SGD")
    table = new_table(
        title=title + (": ε at δ" if solved == "epsilon" else ": δ at ε"),
        caption=(f"{run}. 'approximation' may be BELOW the true value: never claim it; "
                 "the bracket surely contains the true value"),
    )
    cols = (["σ"] if len(sigmas) > 1 else []) + [
        "δ" if given == "delta" else "ε", "accountant", "ε" if solved == "epsilon" else "δ",
        "kind", "bracket", "time"]
    for col in cols:
        table.add_column(col, justify="left" if col in ("accountant", "kind") else "right")
    for res in data["results"]:
        for row in res["accountants"]:
            bracket = row["bracket"]
            cells = ([fmt(res["noise_multiplier"], 6)] if len(sigmas) > 1 else []) + [
                f"{res[given]:g}", row["accountant"],
                fmt(row[solved], 6) if solved == "epsilon" else f"{row[solved]:.4g}",
                row["kind"],
                (f"[{fmt(bracket[0], 4)}, {fmt(bracket[1], 4)}]" if solved == "epsilon"
                 else f"[{bracket[0]:.4g}, {bracket[1]:.4g}]") if bracket else "",
                f"{1e3 * row['seconds']:.1f} ms",
            ]
            table.add_row(*cells)
    console.print(table)


def _once(values: tuple[T, ...], flag: str) -> T | None:
    """The value of an option that takes one: given twice is an error, never "the last wins"."""
    if len(values) > 1:
        raise InvalidParameterError(
            f"{flag} was given {len(values)} times ({', '.join(str(v) for v in values)}); "
            "it takes one value"
        )
    return values[0] if values else None


@click.command("dpsgd")
@click.option("-q", "--sample-rate", "sample_rates", type=_RATE, multiple=True, metavar="FLOAT",
              help="Sampling rate q in (0, 1] (batch/dataset).")
@click.option("-T", "--steps", "steps_given", type=_STEPS, multiple=True, metavar="INT",
              help="Number of steps T ≥ 1.")
@click.option("--batch-size", "batch_sizes", type=click.IntRange(1), multiple=True,
              metavar="INT", help="Batch size B (with --dataset-size, --epochs).")
@click.option("--dataset-size", "dataset_sizes", type=click.IntRange(1), multiple=True,
              metavar="INT", help="Dataset size N.")
@click.option("--epochs", "epochs_given", type=Number(0, math.inf, min_open=True,
              max_open=True), multiple=True, metavar="FLOAT",
              help="Epochs: T = ⌈epochs·N/B⌉ steps.")
@click.option("-d", "--delta", "deltas", type=_DELTA, multiple=True, metavar="FLOAT",
              help="δ in (0, 1): report ε at it (repeatable).")
@click.option("-s", "--noise-multiplier", "noise_multipliers", type=_SIGMA, multiple=True,
              metavar="FLOAT",
              help="Noise multiplier σ (noise std / clipping norm): report ε (repeatable).")
@click.option("--phase", "phases", type=(_SIGMA, _RATE, _STEPS), multiple=True,
              metavar="SIGMA Q STEPS",
              help="A phase of a schedule: STEPS steps at noise multiplier SIGMA and sampling "
                   "rate Q (repeatable, in order; instead of -s, -q, -T).")
@click.option("-e", "--epsilon", "epsilons", type=_TARGET, multiple=True, metavar="FLOAT",
              help="Target ε: report the least noise multiplier instead (repeatable).")
@click.option("--at-epsilon", "at_epsilons", type=_AT_EPSILON, multiple=True, metavar="FLOAT",
              help="Report δ at this ε instead of ε at -d (repeatable).")
@click.option("--sampling", "samplings", type=click.Choice(SAMPLINGS), multiple=True,
              help="Poisson (add/remove neighbours; default) or fixed batches without "
                   "replacement (substitution neighbours, sensitivity 2C).")
@click.option("--accountant", "accountants", type=click.Choice(DPSGD_ACCOUNTANTS),
              multiple=True, help="Only these accountants (repeatable; default: all).")
@json_option
def dpsgd_command(
    sample_rates: tuple[float, ...],
    steps_given: tuple[int, ...],
    batch_sizes: tuple[int, ...],
    dataset_sizes: tuple[int, ...],
    epochs_given: tuple[float, ...],
    deltas: tuple[float, ...],
    noise_multipliers: tuple[float, ...],
    phases: tuple[tuple[float, float, int], ...],
    epsilons: tuple[float, ...],
    at_epsilons: tuple[float, ...],
    samplings: tuple[str, ...],
    accountants: tuple[str, ...],
    as_json: bool,
) -> None:
    """ε of a DP-SGD run under every accountant (PLD, RDP, GDP-CLT, amplify+compose), each
    labelled, at one or more δ; a schedule of phases (--phase); δ at a given ε (--at-epsilon);
    or, with --epsilon, the least noise multiplier that certifies it."""
    given = [name for name, values in (("--noise-multiplier", noise_multipliers),
                                       ("--phase", phases), ("--epsilon", epsilons)) if values]
    if len(given) != 1:
        raise InvalidParameterError(
            "give exactly one of --noise-multiplier (report ε), --phase (a schedule) and "
            f"--epsilon (report σ){'; got ' + ' and '.join(given) if given else ''}"
        )
    sampling = _once(samplings, "--sampling") or "poisson"
    single = (_once(sample_rates, "--sample-rate"), _once(steps_given, "--steps"),
              _once(batch_sizes, "--batch-size"), _once(dataset_sizes, "--dataset-size"),
              _once(epochs_given, "--epochs"))
    if phases:
        if any(v is not None for v in single):
            raise InvalidParameterError(
                "--phase gives the whole run: leave out --sample-rate, --steps, "
                "--batch-size, --dataset-size and --epochs"
            )
        q, t, how = None, None, f"{len(phases)} phase{'s' if len(phases) > 1 else ''}"
    else:
        q, t, how = resolve_run(*single)
    with progress("accounting"):
        data = dpsgd_reports(
            sampling=sampling, deltas=deltas, sample_rate=q, steps=t,
            noise_multipliers=noise_multipliers, epsilons=epsilons, phases=phases,
            at_epsilons=at_epsilons, accountants=accountants or None,
        )
    data["run"] = how
    emit(data, as_json, lambda console: _render(console, data, how))
