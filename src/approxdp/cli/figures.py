"""``approxdp plot`` and ``approxdp reproduce``: two Click commands for the CLI group.

They are standalone :class:`click.Command` objects (``plot_command``, ``reproduce_command``)
that the application group registers. Bad input raises a subclass of
:class:`approxdp.errors.ApproxDPError`, which the group prints as one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from approxdp.errors import InvalidParameterError, UnknownMethodError

__all__ = ["plot_command", "reproduce_command"]

_FORMATS = (".png", ".pdf", ".svg")


def _check_out_file(out: str | None) -> Path:
    if out is None:
        raise InvalidParameterError("--out FILE is required (a .png, .pdf or .svg file)")
    path = Path(out)
    if path.suffix.lower() not in _FORMATS:
        raise InvalidParameterError(
            f"--out must end in {', '.join(_FORMATS)}, got --out={out!r}"
        )
    if not path.parent.exists() or not path.parent.is_dir():
        raise InvalidParameterError(
            f"--out: the folder {str(path.parent)!r} does not exist"
        )
    return path


@click.command("plot")
@click.argument("name", required=False)
@click.option("--out", "-o", "out", type=str, default=None, metavar="FILE",
              help="Where to write the figure (.png, .pdf or .svg).")
@click.option("--epsilon", type=float, default=None, help="epsilon, for plots that take it.")
@click.option("--delta", type=float, default=None, help="delta, for plots that take it.")
@click.option("--sigma", type=float, multiple=True,
              help="noise sigma (repeatable), for 'profiles'; the noise multiplier for 'dpsgd'.")
@click.option("--sample-rate", type=float, default=None,
              help="DP-SGD sampling rate q in (0, 1], for 'dpsgd'.")
@click.option("--steps", type=int, default=None, help="DP-SGD steps T (the last), for 'dpsgd'.")
@click.option("--seed", type=int, default=None, help="Seed of the simulation.")
@click.option("--quick", is_flag=True, help="Fewer repetitions: faster, noisier.")
@click.option("--dpi", type=int, default=120, show_default=True, help="Resolution of a PNG.")
@click.option("--list", "list_plots", is_flag=True, help="List the plots and exit.")
def plot_command(
    name: str | None, out: str | None, epsilon: float | None, delta: float | None,
    sigma: tuple[float, ...], sample_rate: float | None, steps: int | None, seed: int | None,
    quick: bool, dpi: int, list_plots: bool,
) -> None:
    """Draw one figure by NAME (see --list): Zhao et al.'s fig1-fig5 or a plot of the lecture
    notes (Near & Abuah; Wu's notes)."""
    from rich.console import Console
    from rich.table import Table

    from approxdp.plots import PLOTS, render_plot, save_figure
    from approxdp.plots.registry import option_flag

    console = Console()
    if list_plots:
        table = Table("name", "shows", "options", title="approxdp plot NAME")
        for spec in PLOTS.values():
            table.add_row(spec.name, spec.title, " ".join(option_flag(o) for o in spec.options))
        console.print(table)
        return
    if name is None or name not in PLOTS:
        what = "name a plot" if name is None else f"unknown plot {name!r}"
        raise UnknownMethodError(
            f"{what}: choose one of {', '.join(PLOTS)} (approxdp plot --list)"
        )
    if dpi < 10 or dpi > 1200:
        raise InvalidParameterError(f"--dpi must be in [10, 1200], got --dpi={dpi}")
    path = _check_out_file(out)
    options: dict[str, Any] = {"epsilon": epsilon, "delta": delta, "sigma": sigma,
                               "sample_rate": sample_rate, "steps": steps, "seed": seed,
                               "quick": quick}
    with console.status(f"drawing {name} ..."):
        fig = render_plot(name, **options)
        save_figure(fig, path, dpi=dpi)
    console.print(f"wrote {path}")


@click.command("reproduce")
@click.option("--out", "-o", "out", type=str, required=True, metavar="DIR",
              help="Folder for the figures, report.md and report.html (created if missing).")
@click.option("--quick", is_flag=True, help="Tiny grids and few repetitions (seconds).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the simulations.")
def reproduce_command(out: str, quick: bool, seed: int) -> None:
    """Regenerate Zhao et al.'s results: every figure, Table I/II, G(delta), the experiments."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from approxdp.reproduction import reproduce

    console = Console()
    with Progress(
        TextColumn("[bold]reproduce[/bold] {task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as bar:
        task = bar.add_task("starting", total=1)

        def progress(text: str, done: int, total: int) -> None:
            bar.update(task, description=text, completed=done, total=total)

        result = reproduce(out, quick=quick, progress=progress, seed=seed)
    failing = sum(not c.holds for c in result.table2)
    flagged = sum(r.sigma_verdict != "ok" or r.least_verdict != "ok" for r in result.table1)
    console.print(
        f"wrote {len(result.files)} files to {result.out_dir} in {result.seconds:.0f} s "
        f"({result.settings.name} mode): Table I {flagged} of {len(result.table1)} entries "
        f"with published values that disagree; Table II {failing} of {len(result.table2)} "
        "claims fail. See report.md / report.html."
    )
