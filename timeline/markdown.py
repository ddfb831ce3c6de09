"""Markdown from users and documents, rendered safely: raw HTML off, unsafe links refused."""

from __future__ import annotations

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_SAFE_SCHEMES = ("http:", "https:", "mailto:", "#", "/")


def _validate_link(url: str) -> bool:
    lowered = url.strip().lower()
    return lowered.startswith(_SAFE_SCHEMES) or ":" not in lowered.split("/", 1)[0]


def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table")
    md.validateLink = _validate_link  # type: ignore[method-assign]
    return md


_MD = _renderer()


def render(text: str) -> SafeString:
    """HTML for display: every tag in the input is escaped by the renderer (html=False)."""
    return mark_safe(str(_MD.render(text or "")))  # noqa: S308
