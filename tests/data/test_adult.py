"""The bundled Adult data: verbatim bytes (sha256 of the originals) and parsed counts."""

from __future__ import annotations

import gzip
import hashlib

import pyarrow.compute as pc

from approxdp.data import ADULT_CATEGORICAL, adult_path, load_adult

SHA256 = {
    "adult.data.gz": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test.gz": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}


def test_bundled_files_are_the_originals() -> None:
    for name, digest in SHA256.items():
        assert hashlib.sha256(gzip.decompress(adult_path(name).read_bytes())).hexdigest() == digest
    assert "CC BY 4.0" in adult_path("LICENSE").read_text()


def test_counts_match_readme() -> None:
    assert load_adult("train", complete_only=False).num_rows == 32_561
    assert load_adult("test", complete_only=False).num_rows == 16_281
    everything = load_adult(complete_only=False)
    assert everything.num_rows == 48_842
    complete = load_adult()
    assert complete.num_rows == 45_222
    assert set(pc.unique(complete["income"]).to_pylist()) == {"<=50K", ">50K"}
    cells = complete.group_by(list(ADULT_CATEGORICAL)).aggregate([])
    assert cells.num_rows == 11_300
