"""The public API (`from loadlib import ...`): every listed name resolves, importing loadlib stays free of Locust's
gevent patching until a Locust name is used, and the old paths (`loadlib.user`, `loadlib.shapes`, `loadlib.tokens`)
work with a warning naming the new one."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import loadlib
from tests.support.checkout import ROOT, child_env

PROBE = "import sys; import {module}; print('gevent' in sys.modules, 'locust' in sys.modules)"


def imports_locust(module: str) -> str:
    """What a fresh interpreter has imported after `import module`: 'gevent? locust?'."""
    code = PROBE.format(module=module)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("name", loadlib.__all__)
def test_every_public_name_resolves_and_is_documented(name: str) -> None:
    value = getattr(loadlib, name)
    assert value is not None
    if callable(value) and not getattr(value, "__origin__", None):  # type aliases: see test_api_docs
        doc = (value.__doc__ or "").strip()
        assert doc and not doc.startswith(f"{name}("), f"loadlib.{name} has no docstring for the API reference"


def test_the_names_a_locustfile_needs_import_from_the_package() -> None:
    from loadlib import ErrorClass, LLMUser, Reply, ScenarioSpec

    assert issubclass(LLMUser, object) and ScenarioSpec("x").name == "x"
    assert Reply.__name__ == "Reply" and ErrorClass.OK.value == "ok"


@pytest.mark.parametrize("module", ["loadlib", "loadlib.mock", "loadlib.reports", "loadlib.__main__"])
def test_entry_points_without_locust_do_not_import_gevent(module: str) -> None:
    assert imports_locust(module) == "False False"


def test_a_locust_name_imports_locust_only_when_used() -> None:
    code = "import sys, loadlib; a = 'gevent' in sys.modules; loadlib.LLMUser; print(a, 'gevent' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "False True", done.stderr


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        loadlib.Nope  # noqa: B018


def test_the_old_user_path_works_with_a_warning_naming_the_new_one() -> None:
    import loadlib.user as old

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        user_class = old.LLMUser
    assert user_class is loadlib.LLMUser
    assert [w.category for w in caught] == [DeprecationWarning]
    assert "from loadlib import LLMUser" in str(caught[0].message)
    assert caught[0].filename == __file__  # it points at the line that used the old name


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("loadlib.shapes", "RampShape", "loadlib"),
        ("loadlib.shapes", "StepShape", "loadlib"),
        ("loadlib.tokens", "count_chat", "loadlib"),
        ("loadlib.tokens", "count_text", "loadlib"),
        ("loadlib.tokens", "get_encoding", "loadlib.records.tokens"),
    ],
)
def test_the_other_old_paths_work_with_a_warning_naming_the_new_one(old: str, name: str, new: str) -> None:
    """The shapes and token counters moved in 0.1.0 too (locustfiles/shapes.py and chat.py imported them there)."""
    module = importlib.import_module(old)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(new), name)
    assert [w.category for w in caught] == [DeprecationWarning]
    assert f"use `from {new} import {name}`" in str(caught[0].message)
    assert caught[0].filename == __file__


def test_an_old_path_names_what_it_does_not_have() -> None:
    import loadlib.tokens as old

    with pytest.raises(AttributeError, match=r"module 'loadlib\.tokens' has no attribute 'count_words'"):
        old.count_words  # noqa: B018


def test_every_name_the_old_user_path_had_still_imports() -> None:
    with pytest.warns(DeprecationWarning, match=r"loadlib\.locust\.user import LLMRequestError"):
        from loadlib.user import LLMRequestError  # noqa: F401
    with pytest.warns(DeprecationWarning):
        from loadlib.user import Check, Reply  # noqa: F401
