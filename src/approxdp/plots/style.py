"""Figures without global state: Matplotlib's object API on the Agg canvas, imported lazily.

No ``pyplot``: each plot builds a :class:`matplotlib.figure.Figure` attached to an Agg canvas,
so nothing depends on (or changes) the user's backend, and figures are garbage-collected like
any object. Matplotlib is imported inside the functions: ``import approxdp`` never loads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from approxdp.errors import InvalidParameterError, MissingDependencyError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "ACCOUNTANT_STYLE",
    "METHOD_STYLE",
    "SAVE_FORMATS",
    "accountant_style",
    "log_axes",
    "method_style",
    "new_figure",
    "save_figure",
]

#: Colour, line style and marker of each calibration method, the same in every figure.
METHOD_STYLE: dict[str, dict[str, Any]] = {
    "pdp-optimal": {"color": "#9467bd", "linestyle": "-", "marker": "v"},
    "optimal": {"color": "#000000", "linestyle": "-", "marker": "o"},
    "dwork-2006": {"color": "#d62728", "linestyle": "--", "marker": "s"},
    "dwork-roth-2014": {"color": "#ff7f0e", "linestyle": "--", "marker": "D"},
    "zhao-m1": {"color": "#1f77b4", "linestyle": "-.", "marker": "^"},
    "zhao-m2": {"color": "#17becf", "linestyle": "-.", "marker": "<"},
    "zhao-m3": {"color": "#2ca02c", "linestyle": ":", "marker": ">"},
    "zhao-m4": {"color": "#8c564b", "linestyle": ":", "marker": "x"},
}

#: Colour, line style and marker of each DP-SGD accountant, the same in every figure (the
#: ``approxdp plot dpsgd`` figure and the browser's Compose / DP-SGD page).
ACCOUNTANT_STYLE: dict[str, dict[str, Any]] = {
    "pld": {"color": "#000000", "linestyle": "-", "marker": "o"},
    "rdp": {"color": "#d62728", "linestyle": "--", "marker": "s"},
    "gdp-clt": {"color": "#1f77b4", "linestyle": ":", "marker": "^"},
    "amplify+compose": {"color": "#7f7f7f", "linestyle": "-.", "marker": "x"},
}

SAVE_FORMATS = (".png", ".pdf", ".svg")

_OTHER = {"color": "#7f7f7f", "linestyle": "-", "marker": "."}


def _styled(table: dict[str, dict[str, Any]], name: str, markers: bool) -> dict[str, Any]:
    style = dict(table.get(name, _OTHER))
    if not markers:
        style.pop("marker")
    else:
        style["markersize"] = 4
    return style


def method_style(method: str, markers: bool = False) -> dict[str, Any]:
    """Keyword arguments for ``Axes.plot`` that draw ``method`` in its house style."""
    return _styled(METHOD_STYLE, method, markers)


def accountant_style(accountant: str, markers: bool = False) -> dict[str, Any]:
    """Keyword arguments for ``Axes.plot`` that draw a DP-SGD ``accountant`` in its style."""
    return _styled(ACCOUNTANT_STYLE, accountant, markers)


def new_figure(
    nrows: int = 1, ncols: int = 1, *, width: float = 6.4, height: float = 4.2,
    squeeze: bool = False,
) -> tuple[Figure, npt.NDArray[np.object_]]:
    """A Figure on the Agg canvas with an (nrows, ncols) array of Axes.

    Raises:
        MissingDependencyError: Matplotlib is not installed (``pip install approxdp[plots]``).
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(
            "plots need Matplotlib: pip install 'approxdp[plots]'"
        ) from exc
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=squeeze)
    return fig, axes


def log_axes(ax: Axes, x: bool = False, y: bool = False) -> None:
    """Log scale on the chosen axes, with a light grid."""
    if x:
        ax.set_xscale("log")
    if y:
        ax.set_yscale("log")
    ax.grid(True, which="major", alpha=0.3)


def save_figure(fig: Figure, path: str | Path, *, dpi: int = 120) -> Path:
    """Write ``fig`` to ``path`` (.png, .pdf or .svg) and return the path.

    Raises:
        InvalidParameterError: another extension.
    """
    out = Path(path)
    if out.suffix.lower() not in SAVE_FORMATS:
        raise InvalidParameterError(
            f"figure file must end in {', '.join(SAVE_FORMATS)}, got {str(out)!r}"
        )
    fig.savefig(out, dpi=dpi)
    return out
