"""``approxdp dpsgd``: the ε of a DP-SGD run under every accountant, or the noise for a target.

- ``--noise-multiplier S``: ε at δ under each accountant, with its kind (exact, upper bound,
  approximation) and the time it took; the PLD row carries its certified bracket.
- ``--epsilon E``: the least noise multiplier whose certified (PLD) ε is ≤ E.

The run is given either as ``--sample-rate Q --steps T`` or as ``--batch-size B
--dataset-size N --epochs K`` (q = B/N, T = ⌈K·N/B⌉).
"""

from __future__ import annotations

import math
from typing import Any

import click
from rich.console import Console

from approxdp.accounting.dpsgd.accountants import DPSGD_ACCOUNTANTS
from approxdp.cli.output import emit, fmt, json_option, new_table, progress
from approxdp.errors import InvalidParameterError
from approxdp.events import SAMPLINGS
from approxdp.reports.dpsgd import dpsgd_report

__all__ = ["dpsgd_command", "resolve_run"]


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


def _render(console: Console, data: dict[str, Any], how: str) -> None:
    run = (
        f"q = {fmt(data['sample_rate'], 6)}, T = {data['steps']} ({how}), "
        f"δ = {data['delta']:g}, {data['sampling']} sampling"
    )
    if data["mode"] == "noise-multiplier":
        table = new_table(
            title=f"Least noise multiplier for ε = {data['epsilon']:g}",
            caption=f"{run}; certified by the PLD accountant ({data['seconds']:.2f} s)",
        )
        table.add_column("noise multiplier σ", justify="right")
        table.add_row(fmt(data["noise_multiplier"], 6))
        console.print(table)
        return
    table = new_table(
        title=f"DP-SGD with noise multiplier σ = {data['noise_multiplier']:g}",
        caption=(f"{run}. 'approximation' may be BELOW the true ε: never claim it; "
                 "the bracket surely contains the true ε"),
    )
    for col in ("accountant", "ε", "kind", "bracket", "time"):
        table.add_column(col, justify="left" if col in ("accountant", "kind") else "right")
    for row in data["accountants"]:
        bracket = row["bracket"]
        table.add_row(
            row["accountant"],
            fmt(row["epsilon"], 6),
            row["kind"],
            f"[{fmt(bracket[0], 4)}, {fmt(bracket[1], 4)}]" if bracket else "",
            f"{1e3 * row['seconds']:.1f} ms",
        )
    console.print(table)


@click.command("dpsgd")
@click.option("-q", "--sample-rate", type=float, help="Sampling rate q in (0, 1] (batch/dataset).")
@click.option("-T", "--steps", type=int, help="Number of steps T ≥ 1.")
@click.option("--batch-size", type=int, help="Batch size B (with --dataset-size, --epochs).")
@click.option("--dataset-size", type=int, help="Dataset size N.")
@click.option("--epochs", type=float, help="Epochs: T = ⌈epochs·N/B⌉ steps.")
@click.option("-d", "--delta", type=float, required=True, help="δ in (0, 1).")
@click.option("-s", "--noise-multiplier", type=float,
              help="Noise multiplier σ (noise std / clipping norm): report ε.")
@click.option("-e", "--epsilon", type=float,
              help="Target ε: report the least noise multiplier instead.")
@click.option("--sampling", type=click.Choice(SAMPLINGS), default="poisson", show_default=True,
              help="Poisson (add/remove neighbours) or fixed batches without replacement "
                   "(substitution neighbours, sensitivity 2C).")
@click.option("--accountant", "accountants", type=click.Choice(DPSGD_ACCOUNTANTS),
              multiple=True, help="Only these accountants (repeatable; default: all).")
@json_option
def dpsgd_command(
    sample_rate: float | None,
    steps: int | None,
    batch_size: int | None,
    dataset_size: int | None,
    epochs: float | None,
    delta: float,
    noise_multiplier: float | None,
    epsilon: float | None,
    sampling: str,
    accountants: tuple[str, ...],
    as_json: bool,
) -> None:
    """ε of a DP-SGD run under every accountant (PLD, RDP, GDP-CLT, amplify+compose), each
    labelled; or, with --epsilon, the least noise multiplier that certifies it."""
    if (noise_multiplier is None) == (epsilon is None):
        raise InvalidParameterError(
            "give exactly one of --noise-multiplier (report ε) and --epsilon (report σ)"
        )
    q, t, how = resolve_run(sample_rate, steps, batch_size, dataset_size, epochs)
    with progress("accounting"):
        data = dpsgd_report(
            sample_rate=q, steps=t, delta=delta, sampling=sampling,
            noise_multiplier=noise_multiplier, epsilon=epsilon,
            accountants=accountants or DPSGD_ACCOUNTANTS,
        )
    data["run"] = how
    emit(data, as_json, lambda console: _render(console, data, how))
