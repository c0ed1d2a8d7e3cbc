"""The noise of each query, prepared and checked before the spend.

σ is calibrated once, when the budget is allocated (:mod:`approxdp.releases.plan`), and the
accountant records it. Here each query's mechanism is built from that σ
(:meth:`GaussianMechanism.from_sigma <approxdp.mechanisms.GaussianMechanism.from_sigma>`), never
calibrated again, together with everything else that can fail before anything is spent: the
secure lattice and its certificate, the check that every aggregate fits it, and the σ other
calibrations would need. :func:`check_recorded_sigma` then proves, bit for bit, that every
query is about to add exactly the noise the spend records — or raises
:class:`~approxdp.errors.InternalError` before the spend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from approxdp.calibration import scale_sigma
from approxdp.errors import DataCheckError, InternalError, NotPrivateError
from approxdp.events import ComposedEvent, GaussianEvent, PrivacyEvent
from approxdp.mechanisms import GaussianMechanism
from approxdp.mechanisms.gaussian import SecureGaussianNoise
from approxdp.mechanisms.lattice import MAX_INDEX
from approxdp.releases.plan import AllocatedPlan, AllocatedQuery
from approxdp.releases.result import MethodComparison, compare_methods

__all__ = [
    "SEEDED_NOTE",
    "PreparedNoise",
    "check_recorded_sigma",
    "check_releasable",
    "prepare_noise",
    "recorded_unit_sigma",
]

FloatArray = npt.NDArray[np.float64]

#: The note every seeded release carries (its noise is a reproducible simulation).
SEEDED_NOTE = ("seeded simulation: noise reproducible from the seed, NOT private (tests and "
               "demos only; release without a seed to publish)")


@dataclass(frozen=True)
class PreparedNoise:
    """Everything one query's noise needs, computed (and able to fail) before the spend.

    Attributes:
        mechanism: The Gaussian built from the query's allocated σ, or None when the query is
            released exactly (Δ = 0).
        sigma: Its σ on the scaled vector (0.0 when exact).
        secure: The lattice, exact sampler and domination certificate of the secure release
            for the query's whole vector; None when seeded or exact.
        comparisons: The σ other calibrations would need (:func:`compare_methods`).
        seeded: The noise will come from a seed: a reproducible simulation, not private.
    """

    mechanism: GaussianMechanism | None
    sigma: float
    secure: SecureGaussianNoise | None
    comparisons: tuple[MethodComparison, ...]
    seeded: bool = False

    @property
    def simulated(self) -> bool:
        """The release is a seeded simulation, NOT private (seeded, and noise is added)."""
        return self.seeded and self.mechanism is not None


def prepare_noise(
    aq: AllocatedQuery, allocated: AllocatedPlan, seeded: bool, dimension: int
) -> PreparedNoise:
    """The mechanism of one query, built from its allocated σ, with its secure lattice for
    ``dimension`` coordinates and its comparisons. Raises (typed, nothing spent) where the
    secure release has no certificate — σ/Δ below about 0.025, i.e. ε in the thousands."""
    if aq.sigma <= 0:
        return PreparedNoise(None, 0.0, None, (), seeded)
    mech = GaussianMechanism.from_sigma(
        aq.sigma, aq.effective_sensitivity, epsilon=allocated.epsilon,
        delta=allocated.delta_gaussian, method=allocated.method,
    )
    secure = None
    if not seeded:
        try:
            secure = mech.secure_noise(dimension)
        except NotPrivateError as exc:
            raise NotPrivateError(
                f"{aq.query.label()}: epsilon={allocated.epsilon:g} calibrates sigma = "
                f"{mech.sigma / mech.sensitivity:.3g} x sensitivity, too little noise for the "
                "secure (lattice) release to be certified (it needs sigma/sensitivity above "
                "about 0.025, i.e. epsilon below about a thousand); use a smaller epsilon; "
                "nothing was spent"
            ) from exc
    comparisons = compare_methods(allocated.epsilon, allocated.delta_gaussian,
                                  aq.effective_sensitivity, mech.sigma,
                                  used_method=allocated.method)
    return PreparedNoise(mech, mech.sigma, secure, comparisons, seeded)


def check_releasable(
    aq: AllocatedQuery, noise: PreparedNoise, true: FloatArray | None, n_rows: int
) -> None:
    """Raise :class:`DataError` (nothing spent) if the release could not be computed from
    these aggregates: a sum that overflowed to ±inf (too many rows at bounds this wide), or a
    value too large for the secure lattice (|x/g| ≥ 2^52). ``true`` is the (cells, measures)
    matrix of aggregates, or None for a large domain, whose cells stay in the engine: there
    every scaled coordinate is bounded by the rows read (each row adds at most 1 once scaled),
    and that bound is checked instead."""
    measures = aq.query.measures()
    scales = np.array([m.scale for m in measures])
    if true is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            flat = true / scales
        for j, meas in enumerate(measures):
            column = flat[:, j] if flat.ndim == 2 else flat[j:j + 1]
            if not bool(np.all(np.isfinite(column))):
                what = meas.column if meas.column is not None else "rows"
                advice = (f"{aq.query.label()}: the bounds {list(meas.bounds)} are too wide "
                          "for this data (its sum overflows): use tighter bounds")
                raise DataCheckError(
                    f"{aq.query.label()}: the {meas.kind} of {what!r} clamped to "
                    f"{list(meas.bounds)} overflows float64 (beyond ±1.8e308): the bounds are "
                    "too wide for this many rows; use tighter bounds; nothing was spent",
                    advice=advice,
                )
        largest = float(np.max(np.abs(flat))) if flat.size else 0.0
    else:
        largest = float(n_rows)
    if noise.secure is not None:
        limit = MAX_INDEX * noise.secure.lattice.g
        if not largest < limit:
            raise DataCheckError(
                f"{aq.query.label()}: an aggregate of {largest:.6g} (in units of the bounds) "
                f"is too large for the secure lattice of this release (|value| < 2^52 x "
                f"{noise.secure.lattice.g:g} = {limit:.6g}): epsilon is large for this many "
                "rows; use a smaller epsilon or wider bounds; nothing was spent",
                advice=f"{aq.query.label()}: epsilon is too large for this data on the secure "
                       "lattice: use a smaller epsilon or wider bounds",
            )


def recorded_unit_sigma(event: PrivacyEvent | None) -> float | None:
    """σ/Δ of the one Gaussian a plan's event records (None where it records none)."""
    if isinstance(event, GaussianEvent):
        return event.sigma / event.sensitivity
    if isinstance(event, ComposedEvent):
        found = [e for e in event.events if isinstance(e, GaussianEvent)]
        if len(found) == 1:
            return recorded_unit_sigma(found[0])
        raise InternalError(
            f"a release plan records {len(found)} Gaussians in {event!r}, not one; nothing was "
            "spent or released (a bug in approxdp: please report it)"
        )
    return None


def check_recorded_sigma(
    allocated: AllocatedPlan, event: PrivacyEvent | None, noises: Sequence[PreparedNoise]
) -> None:
    """Raise :class:`InternalError` unless each query adds exactly the noise ``event`` records.

    The spend records one Gaussian, σ* at Δ = 1, for the whole plan (Zhao et al. Lemma 15).
    It describes query q only if q's noise is σ_q = scale_sigma(σ*, Δ_q) at its effective
    sensitivity Δ_q: then σ_q/Δ_q ≥ σ* exactly, and the plan's queries together are no less
    private than the Gaussian the ledger holds. Checked bit for bit — the allocated σ_q, the
    mechanism's σ and Δ, the σ the noise and its lattice use — before the spend, so a mismatch
    spends and releases nothing.
    """
    unit = recorded_unit_sigma(event)
    for aq, noise in zip(allocated.queries, noises, strict=True):
        mech = noise.mechanism
        owed: float | None
        used: tuple[float, ...]
        if mech is None:  # released exactly: no noise, nothing recorded for it
            owed, used = 0.0, (aq.sigma, noise.sigma)
            same_noise = noise.secure is None
        else:
            owed = None if unit is None else scale_sigma(unit, aq.effective_sensitivity)
            used = (aq.sigma, mech.sigma, noise.sigma)
            same_noise = mech.sensitivity == aq.effective_sensitivity and (
                noise.secure is None
                or noise.secure == mech.secure_noise(noise.secure.dimension)
            )
        if not (same_noise and all(s == owed for s in used)):
            mech_sigma = None if mech is None else (mech.sigma, mech.sensitivity)
            raise InternalError(
                f"{aq.query.label()}: the release would add noise other than its spend "
                f"records: sigma = {owed!r} at sensitivity {aq.effective_sensitivity!r} is "
                f"recorded ({event!r}), but the allocation has sigma = {aq.sigma!r}, the "
                f"mechanism (sigma, sensitivity) = {mech_sigma!r} and the noise sigma = "
                f"{noise.sigma!r}; nothing was spent or released (a bug in approxdp: please "
                "report it)"
            )
