"""How much work each experiment does in the full reproduction and in the quick one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["FULL", "QUICK", "Settings"]


@dataclass(frozen=True, slots=True)
class Settings:
    """Grid sizes and repetition counts of one reproduction run.

    ``FULL`` gives stable curves (relative standard errors of about 1-2%) in a few minutes on
    two cores; ``QUICK`` runs every experiment on tiny grids in seconds, for the tests.
    """

    name: str
    fig2_points: int
    region_resolution: int
    region_curve_points: int
    table2_quick: bool
    mean_reps: int
    mean_reps_dimension: int
    mean_values: dict[str, npt.NDArray[np.float64]] | None
    adult_reps: int
    adult_values: dict[str, npt.NDArray[np.float64]] | None
    max_error_reps: int
    max_error_ks: npt.NDArray[np.int64] | None
    attack_reps: int
    attack_ks: npt.NDArray[np.int64] | None
    noise_size: int
    composition_k_max: int
    dpi: int


FULL = Settings(
    name="full",
    fig2_points=60,
    region_resolution=160,
    region_curve_points=40,
    table2_quick=False,
    mean_reps=200,
    mean_reps_dimension=100,
    mean_values=None,
    adult_reps=20,
    adult_values=None,
    max_error_reps=200,
    max_error_ks=None,
    attack_reps=2000,
    attack_ks=None,
    noise_size=100_000,
    composition_k_max=10_000,
    dpi=120,
)

QUICK = Settings(
    name="quick",
    fig2_points=12,
    region_resolution=30,
    region_curve_points=6,
    table2_quick=True,
    mean_reps=3,
    mean_reps_dimension=2,
    mean_values={
        "epsilon": np.array([0.1, 0.5, 1.0]),
        "delta": np.array([1e-8, 1e-4, 1e-2]),
        "d": np.array([1.0, 10.0, 100.0]),
    },
    adult_reps=1,
    adult_values={"epsilon": np.array([0.1, 1.0]), "delta": np.array([1e-9, 1e-5])},
    max_error_reps=5,
    max_error_ks=np.array([1, 10, 100, 1000], dtype=np.int64),
    attack_reps=20,
    attack_ks=np.array([1, 10, 100, 500], dtype=np.int64),
    noise_size=2_000,
    composition_k_max=1_000,
    dpi=50,
)
