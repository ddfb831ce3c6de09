"""Secret values in settings: kept out of the store, their changes still seen.

A deployment doc, a repository's ``.env`` or a server's ``ServerArgs`` line may hold a token, a
password or an API key (``HF_TOKEN=hf_...``, ``--api-key sk-...``, ``api_key='sk-...'``). The
timeline, its pages and its postmortem exports are shared far wider than the secret should be,
so a setting whose key names a secret keeps only a fingerprint of its value: ``(hidden; sha256
1f2e3d4c5b6a)``. Two spellings of one value (``'sk-1'``, ``"sk-1"``, ``sk-1``) get one
fingerprint, so a changed secret is still a change and an unchanged one is none. A value that
is not set (``None``, empty) is kept as it is: "not set" is no secret.

Pure (no Django).
"""

from __future__ import annotations

import hashlib
import re

# The key's last word names a secret: HF_TOKEN, HUGGING_FACE_HUB_TOKEN, --api-key,
# admin_api_key, WANDB_API_KEY, AWS_SECRET_ACCESS_KEY, DB_PASSWORD, ... (not max_new_tokens,
# not --tokenizer-path: "token" must be the whole last word).
_SECRET_KEY_RE = re.compile(
    r"(?:^|_)(?:token|secret|password|passwd|api_key|apikey|access_key|secret_key|private_key"
    r"|credential|credentials)$"
)
HIDDEN = "(hidden; sha256 "
_NOT_SET = frozenset({"", "none", "null", "nil"})


def is_secret_key(key: str) -> bool:
    """Whether a setting's key (flag, field or environment variable) names a secret."""
    return bool(_SECRET_KEY_RE.search(key.strip().lstrip("-").replace("-", "_").lower()))


def hidden(value: str | None) -> str | None:
    """The value as stored for a secret key: its fingerprint, or itself when it is not set."""
    if value is None or value.startswith(HIDDEN):
        return value
    text = value.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    if text.lower() in _NOT_SET:
        return value
    return f"{HIDDEN}{hashlib.sha256(text.encode()).hexdigest()[:12]})"


def hide(key: str, value: str | None) -> str | None:
    """``value`` as stored under ``key``: hidden when the key names a secret."""
    return hidden(value) if is_secret_key(key) else value
