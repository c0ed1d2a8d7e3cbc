"""Run the whole check suite inside the project's virtual environment: ruff, mypy, the docs
build (``mkdocs build --strict``, into a temporary folder) and pytest.

Usage: ``python3 scripts/test.py [extra pytest arguments]``. This is the README's test command
and exactly what ``.ci/run`` calls. It runs the engine conformance suite on DuckDB and on
Spark in local mode (``APPROXDP_NO_SPARK=1`` leaves PySpark out and skips the Spark tests),
the end-to-end tests of the Opacus accountant with real Opacus and torch on CPU
(``APPROXDP_NO_OPACUS=1`` leaves them out), and the browser tests of ``approxdp serve`` in
Debian's Chromium (installed here with apt-get when missing and running as root; Playwright's
own browser download is never used). In CI (``CI=true``) the browser tests fail without a
browser; elsewhere they skip, saying why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _venv import NO_OPACUS, NO_SPARK, run

#: Names of a Chromium the browser tests can drive (the first found on PATH is used).
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def ensure_chromium() -> None:
    """Install Debian's ``chromium`` for the browser tests when none is found and this runs as
    root with apt-get; otherwise say what to do (the tests then skip, or fail in CI)."""
    if os.environ.get("APPROXDP_CHROMIUM") or any(shutil.which(n) for n in CHROMIUM_NAMES):
        return
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if not (is_root and shutil.which("apt-get")):
        print("[approxdp] no Chromium for the browser tests of 'approxdp serve': install "
              "Debian's package (sudo apt-get install chromium) or set APPROXDP_CHROMIUM; "
              "they skip without it (and fail in CI)", flush=True)
        return
    print("[approxdp] installing Debian's chromium for the browser tests (apt-get)", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "chromium"]):
        done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            print(f"[approxdp] '{' '.join(cmd)}' failed (exit {done.returncode}); the browser "
                  "tests will say what is missing", flush=True)
            return


def main() -> int:
    # CI must prove both engines: without PySpark or Java the Spark tests fail, not skip
    env = {} if NO_SPARK else {"APPROXDP_REQUIRE_SPARK": "1"}
    # likewise the end-to-end tests of the Opacus accountant (torch + Opacus)
    if not NO_OPACUS:
        env["APPROXDP_REQUIRE_OPACUS"] = "1"
    ensure_chromium()
    with tempfile.TemporaryDirectory(prefix="approxdp-site-") as site:
        steps: list[tuple[str, list[str]]] = [
            ("ruff", ["python", "-m", "ruff", "check", "src", "tests", "benchmarks", "scripts",
                      "docs/hooks"]),
            ("mypy", ["python", "-m", "mypy"]),
            # --strict: a broken link, a docstring griffe cannot parse, a CLI command missing
            # from docs/cli.md or a stale generated table fails the build (see mkdocs.yml and
            # docs/hooks/). Not --quiet: it hides the warnings from --strict, which then
            # passes every one of them.
            ("docs", ["python", "-m", "mkdocs", "build", "--strict", "--site-dir", site]),
            ("pytest", ["python", "-m", "pytest", *sys.argv[1:]]),
        ]
        for name, cmd in steps:
            print(f"[approxdp] {name}", flush=True)
            code = run(cmd, env=env)
            if code != 0:
                print(f"[approxdp] {name} failed with exit code {code}", flush=True)
                return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
