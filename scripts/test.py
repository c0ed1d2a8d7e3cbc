"""Run the whole check suite inside the project's virtual environment: ruff, mypy, the docs
build (``mkdocs build --strict``, into a temporary folder) and pytest.

Usage: ``python3 scripts/test.py [extra pytest arguments]``. This is the README's test command
and exactly what ``.ci/run`` calls. It runs the engine conformance suite on DuckDB and on
Spark in local mode (``APPROXDP_NO_SPARK=1`` leaves PySpark out and skips the Spark tests).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _venv import NO_SPARK, run


def main() -> int:
    # CI must prove both engines: without PySpark or Java the Spark tests fail, not skip
    env = {} if NO_SPARK else {"APPROXDP_REQUIRE_SPARK": "1"}
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
