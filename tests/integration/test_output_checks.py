"""An output file that cannot be created in a folder that exists is found at start-up, not after the run: root passes
every permission check, yet /proc (and /sys) take no new file, which only an attempt shows (loadlib.locust.checks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_startup_checks import refused

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not Path("/proc/version").is_file(), reason="needs Linux's /proc"),
]


@pytest.mark.parametrize("path", ["/proc/s.json", "/proc/version"])
def test_an_output_the_folder_refuses_is_one_line_and_exit_2_before_any_load(path: str) -> None:
    line = refused("--llm-summary", path)
    assert f"--llm-summary {path}: cannot" in line, line
