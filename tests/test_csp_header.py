"""timeline.middleware.CSPMiddleware: django-csp's headers, the settings' policy built once."""

from __future__ import annotations

import csp.middleware
import pytest
from csp.constants import NONCE, SELF
from csp.decorators import csp_exempt, csp_update
from django.http import HttpResponse
from django.test import RequestFactory, override_settings

from timeline.middleware import CSPMiddleware

HEADERS = ("Content-Security-Policy", "Content-Security-Policy-Report-Only")


def _headers(middleware_class: type, response: HttpResponse, path: str = "/x") -> dict[str, str]:
    request = RequestFactory().get(path)
    middleware = middleware_class(lambda r: response)
    middleware.process_request(request)
    out = middleware.process_response(request, response)
    return {h: out[h] for h in HEADERS if h in out}


def _plain() -> HttpResponse:
    return HttpResponse(b"{}", content_type="application/json")


def test_a_plain_response_gets_django_csps_header():
    ours = _headers(CSPMiddleware, _plain())
    assert ours == _headers(csp.middleware.CSPMiddleware, _plain())
    assert "default-src 'self'" in ours["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in ours["Content-Security-Policy"]


def test_changed_settings_change_the_header_and_report_only_is_sent():
    before = _headers(CSPMiddleware, _plain())["Content-Security-Policy"]
    policy = {"DIRECTIVES": {"default-src": ["'none'"]}, "EXCLUDE_URL_PREFIXES": ["/skip"]}
    with override_settings(
        CONTENT_SECURITY_POLICY=policy, CONTENT_SECURITY_POLICY_REPORT_ONLY=policy
    ):
        ours = _headers(CSPMiddleware, _plain())
        assert ours == _headers(csp.middleware.CSPMiddleware, _plain())
        assert ours["Content-Security-Policy"].startswith("default-src 'none'")
        assert ours["Content-Security-Policy-Report-Only"].startswith("default-src 'none'")
        # An excluded prefix gets neither, as with django-csp.
        assert _headers(CSPMiddleware, _plain(), "/skip/a") == {}
    assert _headers(CSPMiddleware, _plain())["Content-Security-Policy"] == before


@pytest.mark.parametrize(
    "decorate",
    [csp_update({"img-src": ["https://example.test"]}), csp_exempt()],
    ids=["csp_update", "csp_exempt"],
)
def test_a_views_own_policy_is_django_csps(decorate):
    view = decorate(lambda request: _plain())
    request = RequestFactory().get("/x")
    ours = _headers(CSPMiddleware, view(request))
    assert ours == _headers(csp.middleware.CSPMiddleware, view(request))


def test_a_page_that_used_its_nonce_gets_it_in_the_header():
    policy = {"DIRECTIVES": {"default-src": [SELF], "script-src": [SELF, NONCE]}}
    with override_settings(CONTENT_SECURITY_POLICY=policy):
        request = RequestFactory().get("/x")
        middleware = CSPMiddleware(lambda r: _plain())
        middleware.process_request(request)
        nonce = str(request.csp_nonce)  # a template asked for it
        out = middleware.process_response(request, _plain())
        assert f"'nonce-{nonce}'" in out["Content-Security-Policy"]
        # A response whose page used none: no nonce, as with django-csp.
        assert "nonce" not in _headers(CSPMiddleware, _plain())["Content-Security-Policy"]
