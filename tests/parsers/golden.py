"""Golden-file helpers for parser tests: records -> plain JSON, compared with a stored file.

Set UPDATE_GOLDENS=1 to rewrite the files after a deliberate change (then read the diff)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from pathlib import Path
from typing import Any


def jsonable(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def assert_golden(result: Any, golden: Path) -> None:
    actual = jsonable(result)
    if os.environ.get("UPDATE_GOLDENS"):
        golden.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n")
    assert actual == json.loads(golden.read_text())
