"""The registry of release kinds: one place that says, for each kind of release, its spec, how
its sensitivity and its engine work are derived, the inputs it takes (the command line's
arguments, the browser wizard's fields, a batch spec's keys) and how they build the spec.

Every front end reads :data:`RELEASE_KINDS`: ``approxdp release KIND``'s choices and shape
checks, the keys a ``release batch`` spec accepts, the wizard's list of statistics and the
fields it shows. Adding a kind means its spec (a :class:`~approxdp.releases.specs.Query`, or a
:class:`~approxdp.releases.derived.DerivedQuery` with its own derivation, parts and
post-processing) in its own module, and one entry here.

>>> RELEASE_KINDS["median"].build(KindInputs(columns=("age",), bounds=(0, 100))).label()
'median(age)'
>>> RELEASE_KINDS["count"].problem(KindInputs(columns=("age",)))
InputProblem(kind='count', input='columns', problem='unexpected')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from approxdp.engines.shapes import KeyValue
from approxdp.errors import InvalidParameterError
from approxdp.releases.bounds import PrivateBounds
from approxdp.releases.quantiles import Median, Quantiles, QuantileTree
from approxdp.releases.specs import Count, Histogram, Mean, OutsideDomain, Query, Sum
from approxdp.releases.variance import Std, Variance

__all__ = [
    "DEFAULT_QS",
    "RELEASE_KINDS",
    "InputProblem",
    "KindInputs",
    "ReleaseKind",
    "release_kind",
]

#: The quantiles released when none are given.
DEFAULT_QS = (0.25, 0.5, 0.75)

Arity = Literal["none", "one", "many"]
Input = Literal["columns", "bounds", "by", "domain", "qs", "tree"]


@dataclass(frozen=True, slots=True)
class KindInputs:
    """What a front end collects for one release before it becomes a spec (public values
    only): the value column (``columns[0]``) or the columns counted, clamping bounds (or
    ``"private"``: estimated first, :meth:`PrivateTable.release_kind
    <approxdp.releases.session.PrivateTable.release_kind>`), group columns and their public
    domain, quantiles, the shape of a quantile tree (``bins``, ``branching``: None for
    :class:`~approxdp.releases.quantiles.QuantileTree`'s default; :meth:`tree` checks it, which
    front ends call before anything is spent), and a label (default: ``kind(column)``)."""

    columns: tuple[str, ...] = ()
    bounds: tuple[float, float] | Literal["private"] | None = None
    by: tuple[str, ...] = ()
    domain: Mapping[str, Sequence[KeyValue]] | None = None
    outside_domain: OutsideDomain = "error"
    qs: tuple[float, ...] = ()
    name: str = ""
    bins: int | None = None
    branching: int | None = None

    def tree(self) -> QuantileTree:
        """The quantile tree's shape: the given ``bins``/``branching``, defaults elsewhere.

        Raises:
            ParameterTypeError: ``bins`` or ``branching`` is not an integer.
            InvalidParameterError: ``bins`` is not a power of ``branching`` in [branching,
                MAX_BINS], or ``branching`` is outside [2, MAX_BINS].
        """
        default = QuantileTree()
        return QuantileTree(default.bins if self.bins is None else self.bins,
                            default.branching if self.branching is None else self.branching)


@dataclass(frozen=True, slots=True)
class InputProblem:
    """Why inputs do not fit a kind: ``input`` is ``unexpected`` (the kind takes none),
    ``missing``, or for ``columns`` not ``one`` (exactly one value column) or ``many`` (at
    least one). Each front end words it in its own terms (options, keys, fields)."""

    kind: str
    input: Input
    problem: Literal["unexpected", "missing", "one", "many"]


@dataclass(frozen=True, slots=True)
class ReleaseKind:
    """One kind of release.

    Attributes:
        name: what every front end calls it (``approxdp release NAME``, ``kind = "NAME"``).
        spec: its query spec.
        summary: what it releases, in a line.
        columns: ``"none"``, ``"one"`` value column, or ``"many"`` columns counted over.
        bounds: whether it clamps to bounds (and so also takes ``"private"`` bounds).
        groups: whether it takes ``by`` columns (sum, mean).
        domain: whether it takes a public domain of its cells' columns.
        qs: whether it takes the quantiles to release.
        tree: whether it takes the shape of a quantile tree (``bins``, ``branching``).
        sensitivity: how its sensitivity is derived, in a line.
        engine: the engine work it needs, in a line.
        make: the spec from checked inputs and the label.
        hint: what to use instead when the inputs do not fit, if anything.
    """

    name: str
    spec: type[Query]
    summary: str
    columns: Arity
    bounds: bool
    groups: bool
    domain: bool
    qs: bool
    sensitivity: str
    engine: str
    make: Callable[[KindInputs, str], Query]
    hint: str = ""
    tree: bool = False

    def problem(self, inputs: KindInputs) -> InputProblem | None:
        """The first way ``inputs`` do not fit this kind, or None."""
        n = len(inputs.columns)
        checks: tuple[tuple[Input, bool, Literal["unexpected", "missing", "one", "many"]], ...] = (
            ("columns", self.columns == "none" and n > 0, "unexpected"),
            ("columns", self.columns == "one" and n != 1, "one"),
            ("columns", self.columns == "many" and n == 0, "many"),
            ("bounds", self.bounds and inputs.bounds is None, "missing"),
            ("bounds", not self.bounds and inputs.bounds is not None, "unexpected"),
            ("by", not self.groups and bool(inputs.by), "unexpected"),
            ("domain", not self.domain and bool(inputs.domain), "unexpected"),
            ("qs", not self.qs and bool(inputs.qs), "unexpected"),
            ("tree", not self.tree and (inputs.bins is not None or inputs.branching is not None),
             "unexpected"),
        )
        for name, failed, what in checks:
            if failed:
                return InputProblem(self.name, name, what)
        return None

    def build(self, inputs: KindInputs) -> Query:
        """The spec of ``inputs`` (checked by the spec itself: bounds, domains, qs...).

        Raises:
            InvalidParameterError: the inputs do not fit the kind (:meth:`problem`, worded
                with the API's parameter names), or the spec refuses them.
        """
        found = self.problem(inputs)
        if found is not None:
            raise InvalidParameterError(describe(found))
        if inputs.bounds == "private":
            raise InvalidParameterError(
                f"{self.name}: bounds='private' are estimated by a release of their own before "
                "this one (two spends): use PrivateTable.release_kind, or give bounds=(low, high)"
            )
        label = inputs.name or (
            f"{self.name}({', '.join(inputs.columns)})" if inputs.columns else "")
        return self.make(inputs, label)


def describe(problem: InputProblem) -> str:
    """``problem`` in the API's words (parameter names); front ends word their own."""
    kind = RELEASE_KINDS[problem.kind]
    words = {
        ("columns", "unexpected"): f"{kind.name} takes no columns",
        ("columns", "one"): f"{kind.name} needs exactly one value column",
        ("columns", "many"): f"{kind.name} needs at least one column to count over",
        ("bounds", "missing"): f"{kind.name} needs bounds=(low, high): values are clamped to "
                               "them, and privacy parameters never come from the data",
        ("tree", "unexpected"): f"{kind.name} takes no bins or branching (the shape of a "
                                "quantile tree: median, quantiles)",
    }
    text = words.get((problem.input, problem.problem),
                     f"{kind.name} takes no {problem.input}")
    return text + (f"; {kind.hint}" if kind.hint else "")


def _value(inputs: KindInputs) -> tuple[str, tuple[float, float]]:
    assert inputs.bounds is not None and inputs.bounds != "private"  # build() checked it
    return inputs.columns[0], inputs.bounds


def _sum(inputs: KindInputs, label: str) -> Query:
    column, bounds = _value(inputs)
    return Sum(column, bounds, inputs.by, inputs.domain, inputs.outside_domain, name=label)


def _mean(inputs: KindInputs, label: str) -> Query:
    column, bounds = _value(inputs)
    return Mean(column, bounds, inputs.by, inputs.domain, inputs.outside_domain, name=label)


def _histogram(inputs: KindInputs, label: str) -> Query:
    return Histogram(inputs.columns, inputs.domain, inputs.outside_domain, name=label)


def _quantiles(inputs: KindInputs, label: str) -> Query:
    column, bounds = _value(inputs)
    tree = inputs.tree()
    return Quantiles(column, inputs.qs or DEFAULT_QS, bounds, tree.bins, tree.branching,
                     name=label)


def _median(inputs: KindInputs, label: str) -> Query:
    column, bounds = _value(inputs)
    tree = inputs.tree()
    return Median(column, (0.5,), bounds, tree.bins, tree.branching, name=label)


def _variance(inputs: KindInputs, label: str) -> Query:
    column, bounds = _value(inputs)
    return Variance(column, bounds, name=label)


def _std(inputs: KindInputs, label: str) -> Query:
    column, bounds = _value(inputs)
    return Std(column, bounds, name=label)


def _bounds(inputs: KindInputs, label: str) -> Query:
    return PrivateBounds(inputs.columns[0], name=label)


_CELL = "a unit adds ≤ m rows to ≤ k cells"

#: Every kind of release, by name, in the order front ends list them.
RELEASE_KINDS: dict[str, ReleaseKind] = {
    k.name: k
    for k in (
        ReleaseKind(
            "count", Count, "the number of rows", "none", False, False, False, False,
            "Δ2 = m (add/remove; a present unit counts 1 to m rows)",
            "one global count (aggregate)", lambda inputs, label: Count(name=inputs.name),
            hint="for counts per group, release a histogram",
        ),
        ReleaseKind(
            "sum", Sum, "the sum of a column clamped to bounds, optionally per group",
            "one", True, True, True, False,
            f"Δ2 = m·max(|L|, |U|)·√k ({_CELL}); per group a noisy count selects cells "
            "without a domain",
            "grouped clamped sum (aggregate)", _sum,
        ),
        ReleaseKind(
            "mean", Mean, "the mean of a column clamped to bounds, optionally per group",
            "one", True, True, True, False,
            f"one Gaussian on (Σ(x − c), n), c the bounds' midpoint: Δ2 from both ({_CELL})",
            "grouped centred clamped sum and count (aggregate)", _mean,
        ),
        ReleaseKind(
            "histogram", Histogram, "counts per combination of columns", "many", False, False,
            True, False,
            f"Δ2 = m√k ({_CELL}); cells chosen privately without a domain",
            "grouped count (aggregate)", _histogram,
        ),
        ReleaseKind(
            "median", Median, "the median of a column clamped to bounds", "one", True, False,
            False, False,
            "a tree of D histograms over the bounds: Δ2 = m√k per level, levels joint",
            "bin indices of each level (derive), then D grouped counts (aggregate)", _median,
            tree=True,
        ),
        ReleaseKind(
            "quantiles", Quantiles, "quantiles of a column clamped to bounds, from one tree",
            "one", True, False, False, True,
            "a tree of D histograms over the bounds: Δ2 = m√k per level, levels joint",
            "bin indices of each level (derive), then D grouped counts (aggregate)",
            _quantiles, tree=True,
        ),
        ReleaseKind(
            "variance", Variance, "the population variance of a column clamped to bounds",
            "one", True, False, False, False,
            "one Gaussian on (Σd, Σd², n), d = x − midpoint: Δ2 = m√3 (add/remove)",
            "centred value and its square (derive), then three global sums (aggregate)",
            _variance,
        ),
        ReleaseKind(
            "std", Std, "the standard deviation of a column clamped to bounds", "one", True,
            False, False, False,
            "as variance (its square root is post-processing)",
            "centred value and its square (derive), then three global sums (aggregate)",
            _std,
        ),
        ReleaseKind(
            "bounds", PrivateBounds, "private clamping bounds of a column (its 1 % and 99 % "
            "quantiles)", "one", False, False, False, False,
            f"a histogram of 576 signed-log bins: Δ2 = m√k ({_CELL})",
            "signed-log bin index (derive), then one grouped count (aggregate)", _bounds,
        ),
    )
}


def release_kind(name: object) -> ReleaseKind:
    """The kind called ``name``.

    Raises:
        InvalidParameterError: no such kind (the message lists them).
    """
    if not isinstance(name, str) or name not in RELEASE_KINDS:
        raise InvalidParameterError(
            f"kind must be one of {list(RELEASE_KINDS)}, got kind={name!r}"
        )
    return RELEASE_KINDS[name]
