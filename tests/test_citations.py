"""Citations a reader can follow: every source cited in the code and the docs is on the
bibliography page (``docs/bibliography.md``), with its arXiv or DOI link, and nothing points to
a document that does not ship with the project.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIBLIOGRAPHY = ROOT / "docs" / "bibliography.md"


def _shipped_text_files() -> list[Path]:
    """Tracked (and new, not ignored) sources, tests, scripts, benchmarks and docs."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "src", "tests", "docs",
         "benchmarks", "scripts", "README.md", "mkdocs.yml", "pyproject.toml"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()
    files = [ROOT / f for f in listed if f.endswith((".py", ".md", ".yml", ".toml"))]
    return [f for f in files if f.exists() and f != Path(__file__).resolve()]


FILES = _shipped_text_files()

#: What must not appear anywhere: the design notes and seeds live outside the repository.
OUTSIDE = re.compile(r"SPEC\s*§|\bSPEC\b|STYLE\.md|STYLE (?:point|item)|\.\./shared|\bshared/")

#: The short names citations used before the bibliography existed, never expanded anywhere.
UNEXPANDED = re.compile(
    r"\bBW18\b|\bCKS20\b|\bKOV\b|\blecture-(?:wang|wu|ziani)\b|\bseed (?:notes|lecture)"
    r"|\bpaper(?:'s)? (?:Thm|Theorem|Eq|Lemma|Def|Alg|Remark|Table|Fig|Appendix|§|Ineq"
    r"|Mechanism|Cor|Prop|Sec)"
)

#: An author-year citation key: "Balle & Wang 2018", "Zhao et al. 2019", "Dwork et al. 2006".
KEY = re.compile(r"\b[A-Z][\w'-]+(?: et al\.| & [A-Z][\w'-]+) (?:19|20)\d\d\b")

#: The keys the bibliography defines: its bold names.
DEFINED = set(re.findall(r"\*\*([^*]+)\*\*", BIBLIOGRAPHY.read_text(encoding="utf-8")))


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_no_reference_outside_the_repository(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = sorted({m.group(0) for m in OUTSIDE.finditer(text)})
    assert not found, f"{_rel(path)} cites what does not ship: {found}"


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_no_unexpanded_short_names(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = sorted({m.group(0) for m in UNEXPANDED.finditer(text)})
    assert not found, (
        f"{_rel(path)} uses short names no reader can follow: {found}; cite a key of "
        "docs/bibliography.md instead (e.g. 'Zhao et al. Thm 2', 'Canonne et al. 2020')"
    )


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_every_citation_key_is_in_the_bibliography(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    missing = sorted({k for k in KEY.findall(text) if k not in DEFINED})
    assert not missing, f"{_rel(path)} cites keys docs/bibliography.md does not define: {missing}"


@pytest.mark.parametrize("path", [f for f in FILES if f.suffix in (".py", ".md")], ids=_rel)
def test_the_paper_and_the_notes_are_named(path: Path) -> None:
    """"the paper" and "the notes" are fine once the file says which paper and which notes."""
    text = path.read_text(encoding="utf-8")
    if re.search(r"\b[Tt]he paper\b|\bpaper's\b", text) and "Zhao et al." not in text:
        pytest.fail(f"{_rel(path)} says 'the paper' but never names it (Zhao et al. 2019)")
    notes = ("Near & Abuah", "D. Wang's notes", "Wu's notes", "Ziani's notes", "bibliography")
    if re.search(r"\b[Tt]he notes\b|\bnotes'", text) and not any(n in text for n in notes):
        pytest.fail(f"{_rel(path)} says 'the notes' but never names them (Near & Abuah, ...)")


#: An arXiv identifier or a DOI, as cited in code and docs (a link or "arXiv:…", "doi:…").
IDENTIFIER = re.compile(r"arxiv\.org/(?:abs|pdf)/(\d{4}\.\d{4,5})|arXiv:(\d{4}\.\d{4,5})"
                        r"|doi\.org/(10\.[^\s)\]>,;\"']+)|\bdoi:(10\.[^\s)\]>,;\"']+)")


def _identifiers(text: str) -> set[str]:
    return {next(g for g in m.groups() if g).rstrip(".") for m in IDENTIFIER.finditer(text)}


CITED_IDS = _identifiers(BIBLIOGRAPHY.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_every_cited_paper_is_in_the_bibliography(path: Path) -> None:
    """Each arXiv or DOI link in the code and docs is a source of the bibliography page."""
    missing = sorted(_identifiers(path.read_text(encoding="utf-8")) - CITED_IDS)
    assert not missing, f"{_rel(path)} cites sources docs/bibliography.md lacks: {missing}"


def test_bibliography_entries_have_links() -> None:
    """Each key is followed, in its entry, by an arXiv, DOI or web link (the lecture notes of
    D. Wang and S. Wu have none: they are cited by author, title and course)."""
    entries = re.split(r"\n- ", BIBLIOGRAPHY.read_text(encoding="utf-8"))
    for entry in entries:
        key = re.match(r"\*\*([^*]+)\*\*", entry)
        if key is None or key.group(1) in ("D. Wang's notes", "Wu's notes"):
            continue
        assert re.search(r"\]\((?:https?://)", entry), f"no link for {key.group(1)}"
    assert {"Zhao et al. 2019", "Balle & Wang 2018", "Canonne et al. 2020"} <= DEFINED


def test_the_checks_catch_what_they_are_for() -> None:
    assert OUTSIDE.search("see SPEC §3") and OUTSIDE.search("../shared/seeds")
    assert UNEXPANDED.search("(paper Thm 2)") and UNEXPANDED.search("lecture-wu Eq. 17")
    assert UNEXPANDED.search("CKS20") and not UNEXPANDED.search("the paper's published values")
    assert KEY.findall("(Balle & Wang 2018; Zhao et al. 2019, Thm 2)") == [
        "Balle & Wang 2018", "Zhao et al. 2019"
    ]
    cited = _identifiers("See https://arxiv.org/abs/1805.06530, Eq. (6); doi:10.1561/0400000042.")
    assert cited == {"1805.06530", "10.1561/0400000042"}
