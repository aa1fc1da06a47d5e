"""Secrets by value: every form a server may echo a key in is masked; short placeholder keys are left alone."""

from __future__ import annotations

import json
import logging
from urllib.parse import quote, quote_plus

from loadlib.redact import Redactor, install_log_filter, secret_forms

KEY = "sk-proj-Ab/+cd=EfGh1234IjKl5678MnOp"


def forms(key: str) -> list[str]:
    bare = key.removeprefix("sk-proj-")
    out = []
    for k in (key, bare):
        out += [k, quote(k, safe=""), quote_plus(k), json.dumps(k)[1:-1], json.dumps(k)[1:-1].replace("/", "\\/")]
    return out


def test_every_echoed_form_is_masked():
    redact = Redactor([KEY])
    for form in forms(KEY):
        text = f'{{"error": {{"message": "bad key {form}!"}}}}'
        assert form not in redact(text), form
        assert "<redacted>" in redact(text)


def test_forms_include_the_key_without_any_prefix_segment():
    assert {"proj-Ab/+cd=EfGh1234IjKl5678MnOp", "Ab/+cd=EfGh1234IjKl5678MnOp"} <= secret_forms(KEY)


def test_short_suffixes_and_placeholder_keys_are_not_masked():
    assert Redactor(["x"])("x marks the spot") == "x marks the spot"
    assert not Redactor(["", "abc"])
    assert "1234" in Redactor(["my-token-1234"])("order 1234")  # a short tail is not a form of its own


def test_from_environment_reads_only_set_variables():
    redact = Redactor.from_environment(["A", None, "B", "C"], {"A": "secret-value-one", "B": ""})
    assert redact("got secret-value-one") == "got <redacted>"


def test_log_filter_masks_messages_arguments_and_tracebacks(caplog):
    logger = logging.getLogger("loadlib.test_redact")
    handler = logging.StreamHandler()
    logger.addHandler(handler)
    try:
        filt = install_log_filter(Redactor([KEY]), logger)
        record = logger.makeRecord(logger.name, logging.ERROR, __file__, 1, "server said %s", (KEY,), None)
        assert filt.filter(record) and KEY not in record.getMessage()
        try:
            raise ValueError(KEY)
        except ValueError as exc:
            record = logger.makeRecord(logger.name, logging.ERROR, __file__, 1, "boom", (), (type(exc), exc, None))
        filt.filter(record)
        assert KEY not in (record.exc_text or "") and "ValueError" in record.exc_text
        install_log_filter(Redactor(["another-secret-value"]), logger)
        assert len(handler.filters) == 1  # a later run's filter replaces the earlier one
    finally:
        logger.removeHandler(handler)
