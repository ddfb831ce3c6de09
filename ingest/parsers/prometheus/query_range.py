"""Prometheus HTTP API responses: ``query_range`` (matrix) and ``query`` (vector) JSON.

Pure: bytes in, :class:`ParseResult` out; sample times become milliseconds since the epoch.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .. import jsontext
from ..series import Collector, drop_dcgm_blanks
from ..text import decode, head_text
from ..timestamps import TimeError, epoch_ms
from ..types import ParseContext, ParseError, ParseResult, SeriesKey

KIND_QUERY_RANGE = "prometheus_query_range"


def _json_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def parse_query_range(data: bytes, ctx: ParseContext) -> ParseResult:
    """Parse a Prometheus HTTP API ``query_range`` (matrix) or ``query`` (vector) response."""
    file = ctx.name
    text = decode(data, file)
    try:
        doc = jsontext.loads(text, file)
    except json.JSONDecodeError as exc:
        raise ParseError(file, exc.lineno, f"expected JSON: {exc.msg}") from None
    if not isinstance(doc, dict) or "status" not in doc:
        raise ParseError(file, 1, 'expected a JSON object with "status" and "data"')
    if doc["status"] == "error":
        raise ParseError(
            file,
            1,
            f"Prometheus returned an error ({doc.get('errorType', 'unknown')}): "
            f"{doc.get('error', '')}; this HTTP API error answer holds no samples: fix the "
            "query (or its time range) and save Prometheus's answer again",
        )
    if doc["status"] != "success":
        raise ParseError(file, 1, f'expected "status": "success", got {doc["status"]!r}')
    body = doc.get("data")
    if not isinstance(body, dict):
        raise ParseError(file, 1, 'expected "data" to be an object with resultType and result')
    result_type = body.get("resultType")
    if result_type not in ("matrix", "vector"):
        raise ParseError(file, 1, f'expected "resultType" matrix or vector, got {result_type!r}')
    items = body.get("result")
    if not isinstance(items, list):
        raise ParseError(file, 1, 'expected "data.result" to be a list')

    out = Collector(file)
    warnings: list[str] = [f"{file}: Prometheus warning: {w}" for w in doc.get("warnings") or []]
    for i, item in enumerate(items):
        where = f"result[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
            raise ParseError(file, 0, f'{where}: expected an object with a "metric" object')
        labels = dict(item["metric"])
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
            raise ParseError(file, 0, f"{where}.metric: expected string label names and values")
        # A result without __name__ (rate(), sum(), ...) is named after the file: two files
        # of different expressions must not become one series.
        name = labels.pop("__name__", None) or _name_from_file(file)
        key = SeriesKey(name, tuple(sorted(labels.items())))
        out.block(key)
        if result_type == "matrix":
            points = item.get("values")
            if not isinstance(points, list):
                if "histograms" in item:
                    warnings.append(f"{file}: {where}: native histograms are not imported")
                    continue
                raise ParseError(file, 0, f'{where}: expected a "values" list of [time, "value"]')
            field_name = "values"
        else:
            points = [item.get("value")]
            field_name = "value"
        for j, point in enumerate(points):
            at = f"{where}.{field_name}[{j}]" if result_type == "matrix" else f"{where}.value"
            if not isinstance(point, list) or len(point) != 2:
                raise ParseError(file, 0, f'{at}: expected [unix seconds, "value"]')
            seconds, value = _json_number(point[0]), _json_number(point[1])
            if seconds is None or not math.isfinite(seconds) or isinstance(point[0], str):
                raise ParseError(
                    file, 0, f"{at}: expected a unix time in seconds, got {point[0]!r}"
                )
            if value is None:
                raise ParseError(file, 0, f"{at}: bad number: expected a float, got {point[1]!r}")
            try:
                ts = epoch_ms(seconds, "s")
            except TimeError as exc:
                raise ParseError(file, 0, f"{at}: {exc}") from None
            out.add(key, ts, value, 0, at)
    result = ParseResult(kind=KIND_QUERY_RANGE, warnings=warnings)
    result.samples.extend(out.blocks.values())
    drop_dcgm_blanks(result, file)
    if not result.sample_count:
        result.warnings.append(
            f"{file}: no samples found (the query's answer is empty: no series matched in its "
            "window)"
        )
    return result


def _name_from_file(file: str) -> str:
    """The series name for results without ``__name__``: the file's name less its folders
    and extension (``metrics/rate_http.json`` -> ``rate_http``)."""
    base = file.replace("\\", "/").rsplit("/", 1)[-1]
    stem = base.rsplit(".", 1)[0] if "." in base.lstrip(".") else base
    return stem or "query_range"


def looks_like_query_range(name: str, head: bytes) -> bool:
    """True when the head reads as a Prometheus HTTP API query response, or its error answer
    (``{"status":"error","errorType":...}``: reported as Prometheus's error, not unknown)."""
    text = head_text(head).lstrip()
    if not text.startswith("{"):
        return False
    if '"status"' in text and '"errorType"' in text:
        return True
    return '"resultType"' in text or ('"status"' in text and '"data"' in text)
