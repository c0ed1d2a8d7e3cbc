"""The reproduction report as a standalone HTML page, converted by Python-Markdown.

The report (:mod:`approxdp.reproduction.report`) is plain Markdown with pipe tables, so the
``markdown`` package (installed with the ``plots`` extra, which ``reproduce`` needs anyway)
with its ``tables`` extension converts it; this module only wraps the result in a page. Raw
HTML in the text is not passed through: it is escaped and shown as text, like everything the
report prints.
"""

from __future__ import annotations

import html

from approxdp.errors import MissingDependencyError

__all__ = ["markdown_to_html"]

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto;
       padding: 0 1em; line-height: 1.45; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left;
         vertical-align: top; }
th { background: #f2f2f2; }
img { max-width: 100%; border: 1px solid #eee; }
code { background: #f5f5f5; padding: 0 0.2em; }
"""


def markdown_to_html(markdown: str, title: str = "report") -> str:
    """Convert the report's Markdown to a standalone HTML page.

    Raises:
        MissingDependencyError: the ``markdown`` package is not installed
            (``pip install 'approxdp[plots]'``).
    """
    try:
        import markdown as md
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(
            "the HTML report needs Python-Markdown: pip install 'approxdp[plots]'"
        ) from exc
    converter = md.Markdown(extensions=["tables"], output_format="html")
    converter.preprocessors.deregister("html_block")  # raw HTML is text, escaped
    converter.inlinePatterns.deregister("html")
    body = converter.convert(markdown)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )
