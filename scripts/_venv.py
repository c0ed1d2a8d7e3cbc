"""Create or update the project's virtual environment, then run a command inside it.

Used by ``scripts/demo.py`` and ``scripts/test.py`` so that each README command works on a
fresh machine with nothing but Python 3.11+: the first run creates ``.venv`` and installs the
project in editable mode with the extras below; later runs reinstall only when
``pyproject.toml`` (or this list of extras) changed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
# Extras installed into the development environment (see pyproject.toml). ``spark`` is PySpark:
# a ~450 MB source package that pip builds locally (a few minutes on a fresh machine, then
# cached). APPROXDP_NO_SPARK=1 leaves it out (the Spark tests are then skipped).
# ``opacus`` brings torch for the end-to-end tests of the Opacus accountant: it is pinned to
# torch==2.13.0 (a local CPU build, ~25-70 s to install; a plain "torch" would resolve to a
# multi-GB CUDA build). APPROXDP_NO_OPACUS=1 leaves both out (those tests then skip).
ALL_EXTRAS = ("test", "data", "plots", "web", "docs", "spark", "dp-accounting", "opacus")
NO_SPARK = os.environ.get("APPROXDP_NO_SPARK") == "1"
NO_OPACUS = os.environ.get("APPROXDP_NO_OPACUS") == "1"
EXTRAS = tuple(
    e for e in ALL_EXTRAS if not (NO_SPARK and e == "spark") and not (NO_OPACUS and e == "opacus")
)
#: Pins installed with the extras: torch's CPU build (Opacus accepts it, torch >= 2.6).
PINS = ("torch==2.13.0",) if "opacus" in EXTRAS else ()


def _python() -> Path:
    sub = "Scripts" if os.name == "nt" else "bin"
    exe = "python.exe" if os.name == "nt" else "python"
    return VENV / sub / exe


def _fingerprint() -> str:
    digest = hashlib.sha256()
    digest.update((ROOT / "pyproject.toml").read_bytes())
    digest.update(",".join((*EXTRAS, *PINS)).encode())
    return digest.hexdigest()


def ensure_venv(quiet: bool = True) -> Path:
    """Return the venv's interpreter, creating the venv and installing the project if needed."""
    if sys.version_info < (3, 11):  # noqa: UP036 - runs under the system Python
        sys.exit(f"approxdp needs Python >= 3.11; this is {sys.version.split()[0]}")
    python = _python()
    if not python.exists():
        print(f"[approxdp] creating virtual environment in {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    stamp = VENV / ".approxdp-installed"
    wanted = _fingerprint()
    if not stamp.exists() or stamp.read_text() != wanted:
        print("[approxdp] installing approxdp and its dependencies into .venv", flush=True)
        q = ["-q"] if quiet else []
        subprocess.run(
            [str(python), "-m", "pip", "install", *q, "--upgrade", "pip"], check=True, cwd=ROOT
        )
        spec = f".[{','.join(EXTRAS)}]" if EXTRAS else "."
        if "spark" in EXTRAS:
            print("[approxdp] (first time: PySpark is built from a ~450 MB source package, "
                  "which takes a few minutes)", flush=True)
        # --retries: pip retries a dropped connection itself (and resumes partial downloads),
        # which matters for the large PySpark download on a fresh machine's first run
        args = [*q, "--retries", "10", *PINS, "-e", spec]
        done = subprocess.run([str(python), "-m", "pip", "install", *args], cwd=ROOT)
        if done.returncode != 0:
            sys.exit(f"[approxdp] could not install the project's dependencies: pip install {args}")
        stamp.write_text(wanted)
    return python


def run(args: list[str], env: dict[str, str] | None = None) -> int:
    """Run ``args`` (its first element replaced by the venv's python when it is 'python')."""
    python = ensure_venv()
    if args and args[0] == "python":
        args = [str(python), *args[1:]]
    full_env = dict(os.environ)
    full_env["PATH"] = str(python.parent) + os.pathsep + full_env.get("PATH", "")
    full_env["VIRTUAL_ENV"] = str(VENV)
    if env:
        full_env.update(env)
    return subprocess.run(args, cwd=ROOT, env=full_env).returncode
