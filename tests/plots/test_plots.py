"""Plots: the registry, the ``plot`` command, lazy Matplotlib, and rendering without pyplot.

Every figure of the reproduction is also rendered by ``tests/reproduction/test_reproduce.py``;
here each plot function is drawn once from small precomputed data.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from approxdp.accounting import DPSGD_ACCOUNTANTS
from approxdp.cli.figures import plot_command
from approxdp.errors import InvalidParameterError, UnknownMethodError
from approxdp.experiments import (
    averaging_attack,
    composition_curves,
    dpsgd_curves,
    failure_region,
    max_error_experiment,
    mean_estimation,
    noise_samples,
    privacy_profiles,
    sigma_versus_delta,
)
from approxdp.experiments.utility import UtilityCurves
from approxdp.plots import (
    PLOTS,
    plot_adult_histogram,
    plot_averaging_attack,
    plot_composition,
    plot_dpsgd,
    plot_failure_regions,
    plot_max_error,
    plot_mean_estimation,
    plot_noise_histograms,
    plot_privacy_profiles,
    plot_sigma_versus_delta,
    render_plot,
    save_figure,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _fake_histogram(parameter: str) -> UtilityCurves:
    values = np.array([0.1, 1.0]) if parameter == "epsilon" else np.array([1e-9, 1e-5])
    err = np.array([[2.0, 1.0], [3.0, 1.5]])
    return UtilityCurves("Fig. 5(a)", parameter, values, ("optimal", "dwork-2006"), "MSE", err,
                         err * 0.01, err, np.sqrt(err), {"cells": 3.0, "records": 5.0}, 2)


def _figures() -> dict[str, Any]:
    return {
        "fig1": lambda: plot_failure_regions(
            "dp", tuple(failure_region(m, "dp", resolution=12, curve_points=3)
                        for m in ("dwork-roth-2014", "dwork-2006"))),
        "fig2": lambda: plot_sigma_versus_delta(sigma_versus_delta((1.0, 20.0), points=4)),
        "fig4": lambda: plot_mean_estimation((mean_estimation("epsilon", [0.5, 1.0], reps=2),)),
        "fig5": lambda: plot_adult_histogram((_fake_histogram("epsilon"),
                                              _fake_histogram("delta"))),
        "profiles": lambda: plot_privacy_profiles(privacy_profiles((1.0,), points=10)),
        "noise": lambda: plot_noise_histograms(noise_samples(size=300)),
        "composition": lambda: plot_composition(composition_curves(ks=[1, 5, 50, 200])),
        "max-error": lambda: plot_max_error(max_error_experiment(ks=[1, 30], reps=3)),
        "attack": lambda: plot_averaging_attack(averaging_attack(ks=[1, 10], reps=5)),
        "dpsgd": lambda: plot_dpsgd(dpsgd_curves(max_steps=200, points=4)),
    }


@pytest.mark.parametrize("name", list(_figures()))
def test_plot_renders_png(name: str, tmp_path: Path) -> None:
    fig = _figures()[name]()
    fig.set_layout_engine("none")  # layout is exercised by test_reproduce; keep this fast
    path = save_figure(fig, tmp_path / f"{name}.png", dpi=40)
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1000
    assert fig.axes and any(ax.get_title() for ax in fig.axes)


def test_dpsgd_curves_label_every_accountant() -> None:
    c = dpsgd_curves(max_steps=100, points=3)
    assert list(c.steps) == [1, 10, 100]
    assert c.kinds["gdp-clt"] == "approximation" and c.kinds["pld"] == "upper bound"
    for name, eps in c.epsilons.items():
        assert eps.shape == c.steps.shape and all(eps[1:] >= eps[:-1]), name


def test_save_figure_rejects_unknown_format(tmp_path: Path) -> None:
    fig = plot_privacy_profiles(privacy_profiles((1.0,), points=5))
    with pytest.raises(InvalidParameterError, match=r"\.png"):
        save_figure(fig, tmp_path / "x.jpg")


def test_registry_options() -> None:
    assert set(PLOTS) == {"fig1", "fig2", "fig3", "fig4", "fig5", "profiles", "noise",
                          "composition", "max-error", "averaging-attack", "dpsgd"}
    with pytest.raises(UnknownMethodError, match="unknown plot"):
        render_plot("fig9")
    with pytest.raises(InvalidParameterError, match="does not take --delta"):
        render_plot("fig1", delta=1e-5)
    with pytest.raises(InvalidParameterError, match="delta must be in"):
        render_plot("noise", delta=0.0)
    with pytest.raises(InvalidParameterError, match="epsilon must be in"):
        render_plot("composition", epsilon=-1.0)
    with pytest.raises(InvalidParameterError, match="sigma must be in"):
        render_plot("profiles", sigma=(1.0, -2.0))


def test_plot_command_writes_png(tmp_path: Path) -> None:
    out = tmp_path / "profiles.png"
    result = CliRunner().invoke(plot_command, ["profiles", "--sigma", "1", "--sigma", "3",
                                               "--out", str(out), "--dpi", "40"])
    assert result.exit_code == 0, repr(result.exception)
    assert out.read_bytes().startswith(PNG_MAGIC)
    assert f"wrote {out}" in result.output.replace("\n", "")


def test_plot_command_lists_plots() -> None:
    result = CliRunner().invoke(plot_command, ["--list"])
    assert result.exit_code == 0
    for name in PLOTS:
        assert name in result.output


@pytest.mark.parametrize(("args", "error", "match"), [
    (["fig9", "--out", "x.png"], UnknownMethodError, "unknown plot 'fig9'"),
    ([], UnknownMethodError, "name a plot"),
    (["fig1"], InvalidParameterError, "--out FILE is required"),
    (["fig1", "--out", "x.txt"], InvalidParameterError, "--out must end in"),
    (["fig1", "--out", "no/such/folder/x.png"], InvalidParameterError, "does not exist"),
    (["fig1", "--out", "x.png", "--epsilon", "1"], InvalidParameterError, "does not take"),
    (["noise", "--out", "x.png", "--delta", "2"], InvalidParameterError, "delta must be in"),
    (["noise", "--out", "x.png", "--dpi", "5"], InvalidParameterError, "--dpi"),
])
def test_plot_command_bad_input(
    args: list[str], error: type, match: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(plot_command, args)
    assert isinstance(result.exception, error), result.output
    assert match in str(result.exception)
    assert not Path("x.png").exists()


def test_click_rejects_non_numbers() -> None:
    result = CliRunner().invoke(plot_command, ["noise", "--out", "x.png", "--epsilon", "abc"])
    assert result.exit_code == 2 and "epsilon" in result.output


def test_matplotlib_is_lazy_and_pyplot_unused() -> None:
    code = (
        "import sys\n"
        "import approxdp.plots, approxdp.experiments, approxdp.cli.figures\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported at import time'\n"
        "from approxdp.plots import plot_privacy_profiles\n"
        "from approxdp.experiments import privacy_profiles\n"
        "plot_privacy_profiles(privacy_profiles((1.0,), points=5))\n"
        "assert 'matplotlib' in sys.modules\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot used'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_dpsgd_plot_takes_the_run_and_several_noise_multipliers(tmp_path: Path) -> None:
    fig = render_plot("dpsgd", sigma=(0.8, 2.0), sample_rate=0.01, steps=300, quick=True)
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["σ = 0.8, pld (upper bound)", "σ = 0.8, rdp (upper bound)",
                      "σ = 2, pld (upper bound)", "σ = 2, rdp (upper bound)"]
    assert max(line.get_xdata()[-1] for line in ax.get_lines()) == 300
    assert "sampling rate 0.01" in ax.get_title() and "0.8, 2" in ax.get_title()
    one = render_plot("dpsgd", sigma=(1.0,), sample_rate=0.05, steps=50, quick=True)
    assert len(one.axes[0].get_lines()) == len(DPSGD_ACCOUNTANTS)
    with pytest.raises(InvalidParameterError, match="sample_rate must be in"):
        render_plot("dpsgd", sample_rate=1.5)
    with pytest.raises(InvalidParameterError, match="steps must be an integer"):
        render_plot("dpsgd", steps=0)
    with pytest.raises(InvalidParameterError, match="does not take --sample-rate"):
        render_plot("profiles", sample_rate=0.1)
    out = tmp_path / "dpsgd.png"
    result = CliRunner().invoke(plot_command, [
        "dpsgd", "--sigma", "1", "--sigma", "3", "--sample-rate", "0.02", "--steps", "100",
        "--quick", "--out", str(out), "--dpi", "40"])
    assert result.exit_code == 0, repr(result.exception)
    assert out.read_bytes().startswith(PNG_MAGIC)
