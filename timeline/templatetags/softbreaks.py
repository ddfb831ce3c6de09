"""``softbreak``: long keys (``SGLANG_SM120_MMA_TARGET_CTAS``, ``--chunked-prefill-size``,
``/models/dsv4-tok-v2``) may wrap after ``_ = / . , : -`` and nowhere else: the text is escaped,
then a ``<wbr>`` goes after each of those characters that a letter or digit follows."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_AFTER = re.compile(r"([_=/.,:\-])(?=[0-9A-Za-z])")


@register.filter
def softbreak(value: object) -> SafeString:
    # escape() leaves none of these characters in an entity it writes (&amp; &lt; &gt; &quot;
    # &#x27;), so no <wbr> can land inside one.
    return mark_safe(_AFTER.sub(r"\1<wbr>", str(escape(value))))  # noqa: S308
