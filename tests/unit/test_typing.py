"""The type checker over loadlib/ (issue 24): clean, with the public API (loadlib/__init__.py, loadlib/user.py)
held to the strict settings of pyproject.toml's [tool.mypy]. A contract a part breaks fails here, not in a run; and
a locustfile written with the public API (tests/support/typed_locustfile.py), strict too, sees each public name's own
type (a lazy import alone would give a user's type checker `Any` for every one of them)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.checkout import ROOT

pytest.importorskip("mypy", reason="mypy is in requirements-dev.txt")


def test_mypy_finds_nothing_in_loadlib() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout
