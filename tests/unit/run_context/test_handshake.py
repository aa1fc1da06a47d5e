"""Which worker differences are refused at join: loadlib's version or source, the locustfile's content, and a
measurement option the worker was given that differs from the master's; never an option left at its default."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from loadlib.locust.handshake import MEASURED, fingerprint, loadlib_version, locustfile_digest, mismatch
from loadlib.settings import Options, resolve

ROOT = Path(__file__).resolve().parents[3]
CHAT = str(ROOT / "locustfiles" / "chat.py")


def options(**given: object) -> Options:
    base = {k: None for k in MEASURED}
    return resolve(
        SimpleNamespace(locustfile=CHAT, **{**base, "llm_provider": "openai", "llm_model": "mock-llm", **given})
    )


def test_identical_nodes_and_a_worker_without_options_match() -> None:
    master = fingerprint(options(llm_model="gpt-4o"))
    assert master["options"] == {"llm_model": "gpt-4o"}, "only options other than the default are given"
    assert mismatch(master, fingerprint(options(llm_model="gpt-4o"))) is None
    assert mismatch(master, fingerprint(options())) is None, "a plain worker follows the master's values"


def test_each_difference_is_named_in_one_line() -> None:
    master = fingerprint(options())
    other_model = mismatch(master, fingerprint(options(llm_model="gpt-4o")))
    assert other_model == "it was started with --llm-model 'gpt-4o', the master with 'mock-llm'"
    timeout = mismatch(master, fingerprint(options(llm_timeout_total=5.0)))
    assert timeout is not None and "--llm-timeout-total 5.0" in timeout
    assert "loadlib 0.0.9" in str(mismatch(master, {**master, "loadlib": "0.0.9"}))
    assert "locustfile differs" in str(mismatch(master, {**master, "locustfile": "0" * 16}))


def test_the_locustfile_digest_follows_content_not_path(tmp_path: Path) -> None:
    copy = tmp_path / "chat.py"
    copy.write_bytes(Path(CHAT).read_bytes())
    assert locustfile_digest(str(copy)) == locustfile_digest(CHAT) != ""
    copy.write_text(copy.read_text() + "# edited\n")
    assert locustfile_digest(str(copy)) != locustfile_digest(CHAT)
    assert locustfile_digest("no/such/file.py") == ""


def test_the_version_carries_a_digest_of_loadlibs_source() -> None:
    version, _, digest = loadlib_version().partition("+")
    assert version and len(digest) == 12
