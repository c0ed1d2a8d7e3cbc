"""Run the main job (``approxdp demo``) inside the project's virtual environment.

Usage: ``python3 scripts/demo.py [demo options]``; ``--help`` lists them.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _venv import run

if __name__ == "__main__":
    sys.exit(run(["python", "-m", "approxdp", "demo", *sys.argv[1:]]))
