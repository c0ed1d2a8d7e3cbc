"""Griffe extension: turn the Sphinx roles in approxdp's docstrings into API links.

The docstrings cross-reference with Sphinx roles (``:func:`gaussian_delta```,
``:class:`~approxdp.errors.ApproxDPError```), which Markdown would print literally. Before
mkdocstrings renders a docstring, each role becomes an *optional* autorefs link: a link to the
object's section when the API reference renders it, plain code otherwise (external names such
as ``secrets``, or private helpers) — never a broken link and never a build warning.

Unqualified names are resolved in the scope of the object that carries the docstring, as Sphinx
would. Loaded by the mkdocstrings Python handler (``extensions:`` in ``mkdocs.yml``); it uses
only Griffe, which mkdocstrings-python already depends on.
"""

from __future__ import annotations

import html
import re
from typing import Any

from griffe import Extension, Object

# :role:`target`, :role:`~target`, :role:`title <target>` (the last is rare; title kept).
ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):"
    r"`(?P<tilde>~?)(?:(?P<title>[^`<]+?)\s*<(?P<target>[^`>]+)>|(?P<plain>[^`]+))`"
)


def _resolve(obj: Object, target: str) -> str:
    """The full path of ``target`` as seen from ``obj`` (the name unchanged if unknown)."""
    if target.startswith("approxdp."):
        return target
    head, _, rest = target.partition(".")
    scope: Object | None = obj
    while scope is not None:
        try:
            resolved = scope.resolve(head)
        except Exception:  # griffe's NameResolutionError, or an alias it cannot follow
            scope = scope.parent
            continue
        return f"{resolved}.{rest}" if rest else resolved
    return target


def convert_roles(text: str, obj: Object) -> str:
    """``text`` with every Sphinx role replaced by an optional autorefs link."""

    def link(match: re.Match[str]) -> str:
        target = (match["target"] or match["plain"]).strip()
        if match["title"]:
            title = match["title"]
        elif match["tilde"]:
            title = target.rsplit(".", 1)[-1]
        else:
            title = target
        identifier = _resolve(obj, target)
        return (
            f'<autoref identifier="{html.escape(identifier)}" optional>'
            f"<code>{html.escape(title)}</code></autoref>"
        )

    return ROLE.sub(link, text)


class SphinxRolesToLinks(Extension):
    """Rewrite each object's docstring once the whole package is loaded."""

    def on_object(self, *, obj: Object, **kwargs: Any) -> None:
        """Griffe event: convert the roles of ``obj``'s own docstring."""
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = convert_roles(obj.docstring.value, obj)
