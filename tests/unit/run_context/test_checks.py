"""Start-up checks as pure functions: output paths and the endpoint settings, one line each."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadlib.errors import ConfigError
from loadlib.locust.checks import check_endpoint, check_output_path, check_run


def parsed(*args: str):
    """Locust monkey-patches the process on import: imported when a test runs, not when pytest collects."""
    from loadlib.settings import resolve
    from tests.support.locust_env import parsed as parse

    return resolve(parse(*args))


def test_an_output_under_a_file_or_at_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="is a file, not a directory"):
        check_output_path("--llm-summary", str(tmp_path / "f" / "s.json"))
    with pytest.raises(ConfigError, match="is a directory"):
        check_output_path("--html", str(tmp_path))


def test_missing_parents_are_created_and_said_outside_the_current_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert check_output_path("--llm-summary", "results/s.json") is None and (tmp_path / "results").is_dir()
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere" / "r-{worker}.jsonl"
    note = check_output_path("--llm-records", str(elsewhere), worker="w1")
    assert note is not None and "outside the current directory" in note and elsewhere.parent.is_dir()
    elsewhere.parent.rmdir()


def test_endpoint_checks_name_the_problem() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'gemini'"):
        check_endpoint(parsed("--llm-provider", "gemini"), "")
    with pytest.raises(ConfigError, match="no_such"):
        check_endpoint(parsed("--llm-mock", "no_such=1"), "")
    with pytest.raises(ConfigError, match="--arrival-rate"):
        check_endpoint(parsed("--arrival-rate", "-2"), "http://127.0.0.1:9/v1")
    assert check_run(parsed(), "http://127.0.0.1:9/v1") == []
    with pytest.raises(ConfigError, match="--llm-server-metrics 'vllm:8000/metrics': give an http"):
        check_run(parsed("--llm-server-metrics", "vllm:8000/metrics"), "http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="--llm-server-metrics-interval"):
        check_run(parsed("--llm-server-metrics-interval", "0"), "http://127.0.0.1:9/v1")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--llm-capacity-start", "0"), "--llm-capacity-start must be > 0, got 0.0"),
        (("--llm-capacity-start", "20", "--llm-capacity-max", "10"), "--llm-capacity-max must be >= 20, got 10.0"),
        (("--llm-capacity-precision", "1.5"), "--llm-capacity-precision must be above 0 and at most 1, got 1.5"),
        (("--llm-capacity-confirm-s", "-1"), "--llm-capacity-confirm-s must be >= 0, got -1.0"),
    ],
)
def test_the_capacity_search_is_checked_before_load(args: tuple[str, ...], message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{message}$"):
        check_endpoint(parsed(*args), "http://127.0.0.1:9/v1")


@pytest.mark.skipif(not Path("/proc/version").is_file(), reason="needs Linux's /proc")
def test_a_folder_that_refuses_new_files_is_found_at_start_up() -> None:
    """os.access lets root write anywhere; /proc takes no new file whoever asks, which only an attempt shows."""
    for path in ("/proc/s.json", "/proc/version"):
        with pytest.raises(ConfigError, match=f"--llm-summary {path}: cannot .*"):
            check_output_path("--llm-summary", path)


def test_the_write_check_leaves_nothing_behind(tmp_path: Path) -> None:
    (tmp_path / "kept.json").write_text("previous run")
    assert check_output_path("--llm-summary", str(tmp_path / "kept.json")) is None
    check_output_path("--llm-records", str(tmp_path / "new" / "r.jsonl"))
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["kept.json", "new"]
    assert (tmp_path / "kept.json").read_text() == "previous run"
