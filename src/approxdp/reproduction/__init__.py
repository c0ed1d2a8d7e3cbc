"""``reproduce``: the experiments of Zhao et al. 2019 and of the lecture notes, their figures
and a report, into a folder (sources: the bibliography of the documentation).

This layer sits above :mod:`approxdp.experiments` (the experiments as data) and
:mod:`approxdp.plots` (figures drawn from those data) and joins them:

- :func:`reproduce` runs every experiment, draws every figure and writes ``report.md`` and
  ``report.html`` (``approxdp reproduce`` on the command line);
- :class:`Reproduction` holds what one run computed; :data:`FIGURE_FILES` names the figures it
  writes.
"""

from __future__ import annotations

from approxdp.reproduction.reproduce import reproduce
from approxdp.reproduction.results import FIGURE_FILES, Progress, Reproduction

__all__ = ["FIGURE_FILES", "Progress", "Reproduction", "reproduce"]
