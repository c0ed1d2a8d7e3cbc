"""Griffe extension: read the two Sphinx conventions approxdp's sources use.

1. **Roles.** The docstrings cross-reference with Sphinx roles (``:func:`gaussian_delta```,
   ``:class:`~approxdp.errors.ApproxDPError```), which Markdown would print literally. Before
   mkdocstrings renders a docstring, each role becomes an *optional* autorefs link: a link to
   the object's section when the API reference renders it, plain code otherwise (external names
   such as ``secrets``, or private helpers) — never a broken link, never a build warning.
   Unqualified names are resolved in the scope of the object that carries the docstring, as
   Sphinx would.
2. **Doc comments.** Module constants are documented with ``#:`` comments on the lines above
   them; they become the constant's docstring, so the constant is listed in the reference.

Loaded by the mkdocstrings Python handler (``extensions:`` in ``mkdocs.yml``); it uses only
Griffe, which mkdocstrings-python already depends on. The sources are not modified.
"""

from __future__ import annotations

import html
import re
from typing import Any

from griffe import Attribute, Docstring, Extension, Object

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


def doc_comment(attribute: Attribute) -> str | None:
    """The ``#:`` comment lines just above ``attribute``'s definition, joined, or None."""
    if attribute.lineno is None or attribute.parent is None:
        return None
    lines = attribute.module.lines  # the whole file; line numbers are 1-based
    found: list[str] = []
    index = attribute.lineno - 2
    while index >= 0 and lines[index].lstrip().startswith("#:"):
        found.insert(0, lines[index].lstrip()[2:].strip())
        index -= 1
    return " ".join(found) or None


class SphinxConventions(Extension):
    """Rewrite each object's docstring once the whole package is loaded."""

    def on_object(self, *, obj: Object, **kwargs: Any) -> None:
        """Griffe event: adopt a ``#:`` comment, then convert the roles of the docstring."""
        if isinstance(obj, Attribute) and obj.docstring is None:
            text = doc_comment(obj)
            if text is not None:
                model = obj.module.docstring
                obj.docstring = Docstring(
                    text, lineno=obj.lineno, parent=obj,
                    parser=model.parser if model else None,
                    parser_options=model.parser_options if model else None,
                )
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = convert_roles(obj.docstring.value, obj)
