"""controller/logs.py: one JSON object per line, with the call's fields merged in."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from controller import logs


def _record(msg: str, **fields: object) -> logging.LogRecord:
    rec = logging.LogRecord("migc.controller", logging.WARNING, __file__, 1, msg, None, None)
    rec.created = 1764590400.0  # 2025-12-01T12:00:00Z
    rec.msecs = 7.0
    rec.migc = fields
    return rec


def test_formatter_writes_sorted_json_with_the_fields() -> None:
    line = logs.JsonFormatter().format(_record("step failed", node="n0", retry_in=0.5))
    assert json.loads(line) == {
        "ts": "2025-12-01T12:00:00.007Z",
        "level": "warning",
        "logger": "migc.controller",
        "msg": "step failed",
        "node": "n0",
        "retry_in": 0.5,
    }
    assert "\n" not in line
    assert list(json.loads(line)) == sorted(json.loads(line))  # sort_keys: stable lines to grep/diff


def test_values_json_cannot_hold_are_written_as_text_and_exceptions_included() -> None:
    rec = _record("x", obj=object())
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        rec.exc_info = sys.exc_info()
    payload = json.loads(logs.JsonFormatter().format(rec))
    assert payload["obj"].startswith("<object object")
    assert "RuntimeError: boom" in payload["exc"]


def test_setup_and_log(capsys: pytest.CaptureFixture[str]) -> None:
    logger = logs.get_logger()
    saved = (logger.handlers[:], logger.level, logger.propagate)
    try:
        logs.setup("warning")
        logs.log(logging.INFO, "hidden")
        logs.log(logging.ERROR, "shown", node="n0")
        lines = capsys.readouterr().err.splitlines()
        assert [json.loads(x)["msg"] for x in lines] == ["shown"]
        assert json.loads(lines[0])["node"] == "n0"
        assert not logger.propagate and len(logger.handlers) == 1
        logs.setup("INFO")
        assert len(logger.handlers) == 1  # a second setup replaces, never stacks handlers
    finally:
        logger.handlers[:], logger.level, logger.propagate = saved[0], saved[1], saved[2]
