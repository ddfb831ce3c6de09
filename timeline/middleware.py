"""Requests no view can serve, refused before any of them runs.

A NUL character (``%00``) or a lone surrogate in the path or in a parameter can reach no row:
Postgres text cannot hold either, and a query built from one fails inside the database (a 500).
Such requests get a 400 naming the parameter, as JSON under ``/api/`` and as plain text
elsewhere. Under ``/api/`` an error no check foresaw is a JSON 500 rather than an HTML page.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable

import csp.constants
import csp.middleware
import csp.utils
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.http.response import HttpResponseBase

log = logging.getLogger(__name__)
_BAD = re.compile("[\x00\ud800-\udfff]")
_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


def _is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


def bad_part(request: HttpRequest) -> str | None:
    """Which part of the request holds a NUL or a lone surrogate: ``path``, ``parameter
    'q'``, ... or None. Form fields are read (the CSRF check reads them next anyway); uploaded
    files are left to the upload, whose names never become paths (ingest.services.storage)."""
    if _BAD.search(request.path_info):
        return "the path"
    sources = [request.GET]
    if request.method == "POST" and request.content_type in _FORMS:
        sources.append(request.POST)
    for params in sources:
        for key, values in params.lists():
            if _BAD.search(key) or any(_BAD.search(v) for v in values):
                return f"parameter {key[:40]!r}"
    return None


class RefuseNulMiddleware:
    """400 for a NUL character or a lone surrogate anywhere a view would read it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        part = bad_part(request)
        if part is None:
            return self.get_response(request)
        message = f"{part} holds a NUL character or a lone surrogate; expected text without either"
        if _is_api(request):
            return JsonResponse({"error": message}, status=400)
        return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not _is_api(request):
            return None  # Django's own error page (and its log entry)
        log.error("API request %s failed", request.path, exc_info=exception)
        return JsonResponse(
            {"error": "internal error; the details are in the server log"}, status=500
        )


# What a view's csp decorators set on its response: such a response's policy is its own.
_OWN_POLICY = tuple(
    f"_csp_{what}{ro}" for what in ("config", "update", "replace", "exempt") for ro in ("", "_ro")
)
_POLICIES = (
    (csp.constants.HEADER, "CONTENT_SECURITY_POLICY", False),
    (csp.constants.HEADER_REPORT_ONLY, "CONTENT_SECURITY_POLICY_REPORT_ONLY", True),
)


@functools.cache
def _settings_policy(setting: str, report_only: bool) -> str:
    """The policy that ``setting`` gives a response with nothing of its own (cleared when a
    setting changes: tests override them)."""
    del setting  # (the cache key: build_policy reads the setting itself)
    return csp.utils.build_policy(report_only=report_only)


@receiver(setting_changed)
def _forget_policies(**kwargs: object) -> None:
    _settings_policy.cache_clear()


class CSPMiddleware(csp.middleware.CSPMiddleware):
    """django-csp's, with the settings' policy built once: a response no decorator gave a
    policy of its own, whose page used no nonce, gets the same two headers every time, and
    django-csp built them on each response (~30 us, the cost of a small zoom's query). Any
    other response is django-csp's own."""

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        if isinstance(getattr(request, "_csp_nonce", None), str) or any(
            hasattr(response, name) for name in _OWN_POLICY
        ):
            return super().process_response(request, response)
        if settings.DEBUG and response.status_code in (500, 404):
            return response  # (django-csp leaves Django's debug pages alone)
        for header, setting, report_only in _POLICIES:
            policy = _settings_policy(setting, report_only)
            if not policy or header in response:
                continue
            prefixes = (getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES") or ()
            if not request.path_info.startswith(tuple(prefixes)):
                response[header] = policy
        return response
