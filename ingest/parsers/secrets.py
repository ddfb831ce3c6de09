"""Secret values in the evidence: kept out of the store, their changes still seen.

A deployment doc, a repository's ``.env`` or manifest, a server's ``ServerArgs`` line may hold
a token, a password or an API key (``HF_TOKEN=hf_...``, ``--api-key sk-...``,
``api_key='sk-...'``, a k8s ``env`` entry, a changelog's "set HF_TOKEN=..."). The timeline, its
pages and its postmortem exports are shared far wider than the secret should be, so a value
under a key that names a secret keeps only a fingerprint: ``(hidden; 1f2e3d4c5b6a)``, an HMAC
of the value under the deployment's own key (:func:`set_key`: Django's ``SECRET_KEY``), so a
short password cannot be looked up from it. Two spellings of one value (``'sk-1'``,
``"sk-1"``, ``sk-1``) get one fingerprint: a changed secret is still a change, an unchanged one
is none. A value that is not set (``None``, empty) is kept: "not set" is no secret.

Where: every setting, config change and ``ServerArgs`` field (by key); lists and maps stored
whole (a container's env list, a command's words: :func:`scrub`); free text (event titles and
bodies, changelog notes, conditions: :func:`scrub_text`, ``KEY=value`` / ``KEY: value`` /
``--flag value`` forms). The uploaded files themselves are kept as they came.

Pure (no Django).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any

# A key names a secret when its last word does (HF_TOKEN, HUGGING_FACE_HUB_TOKEN, --api-key,
# admin_api_key, WANDB_API_KEY, AWS_SECRET_ACCESS_KEY, DB_PASSWORD, openai.apiKey, hfToken).
# "token" alone is too wide a word (SGLang's bucket_time_to_first_token, max_new_tokens,
# kt_max_deferred_experts_per_token): a token key is a secret when it is "token" or names
# whose token it is (hf_token, github_token, api_token, ...).
_SECRET_WORDS = (
    "secret|password|passwd|credential|credentials|api_key|apikey|access_key|secret_key"  # noqa: S105
    "|private_key|client_secret|auth_key|license_key"
)
_TOKEN_OWNERS = (
    "hf|hub|huggingface|hugging_face_hub|api|auth|access|bearer|github|gh|gitlab|wandb|openai"  # noqa: S105
    "|anthropic|slack|refresh|session|oauth|client|admin|bot|pat|registry|docker|npm|pypi|ngc"
    "|id|jwt|sa|service_account|cloudflare|modelscope|ms"
)
_SECRET_KEY_RE = re.compile(
    rf"(?:^|_)(?:{_SECRET_WORDS})$|^token$|(?:^|_)(?:{_TOKEN_OWNERS})_token$"
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
HIDDEN = "(hidden; "
_NOT_SET = frozenset({"", "none", "null", "nil"})
_key = b""


def set_key(key: bytes) -> None:
    """The key fingerprints are made with (the deployment's SECRET_KEY, set at start-up)."""
    global _key
    _key = key


def _normal(key: str) -> str:
    last = key.strip().lstrip("-").rsplit(".", 1)[-1]
    return _CAMEL.sub("_", last).replace("-", "_").lower()


def is_secret_key(key: str) -> bool:
    """Whether a setting's key (flag, field, environment variable, dotted path) names a secret."""
    return bool(_SECRET_KEY_RE.search(_normal(key)))


def hidden(value: str | None) -> str | None:
    """The value as stored for a secret key: its fingerprint, or itself when it is not set."""
    if value is None or value.startswith(HIDDEN):
        return value
    text = value.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    if text.lower() in _NOT_SET:
        return value
    digest = hmac.new(_key, text.encode(), hashlib.sha256).hexdigest()[:12]
    return f"{HIDDEN}{digest})"


def hide(key: str, value: str | None) -> str | None:
    """``value`` as stored under ``key``: hidden when the key names a secret."""
    return hidden(value) if is_secret_key(key) else value


# `--flag value`, `--flag=value`; then `KEY=value`, `KEY: value`, `"KEY": "value"` in free text.
_FLAG = re.compile(
    r"(?P<key>--?[A-Za-z][\w-]*)(?P<sep>[ \t]+|=)(?P<quote>[\"']?)(?P<value>[^\s\"']+)"
)
_PAIR = re.compile(
    r"(?P<key>[A-Za-z_][\w.-]*)(?P<sep>[\"']?\s*[=:]\s*)(?P<quote>[\"']?)"
    r"(?P<value>[^\s\"',;}\]\)]+)"
)


def _one(m: re.Match[str]) -> str:
    key, value = m.group("key"), m.group("value")
    if not is_secret_key(key) or value.startswith("(hidden") or value.startswith("-"):
        return m.group(0)
    return f"{key}{m.group('sep')}{m.group('quote')}{hidden(value)}"


# A word a secret's key holds (a cheap look before the two substitutions: most text has none).
_HINT = re.compile(r"token|secret|passw|key|credential", re.IGNORECASE)


def scrub_text(text: str) -> str:
    """Free text with every value given to a secret key replaced by its fingerprint."""
    if not text or _HINT.search(text) is None:
        return text
    return _PAIR.sub(_one, _FLAG.sub(_one, text))


def scrub(value: Any) -> Any:
    """A parsed structure (YAML, JSON, TOML) with the secrets in it hidden: a secret key's
    value, a k8s ``{name: HF_TOKEN, value: ...}`` entry's value, the word after a secret flag
    in a command's list of words, ``KEY=value`` strings."""
    if isinstance(value, dict):
        name = value.get("name")
        secret_entry = isinstance(name, str) and is_secret_key(name)
        out: dict[Any, Any] = {}
        for k, v in value.items():
            scalar = isinstance(v, str | int | float) and not isinstance(v, bool)
            if (
                scalar
                and isinstance(k, str)
                and (is_secret_key(k) or (secret_entry and k == "value"))
            ):
                out[k] = hidden(str(v))
            else:
                out[k] = scrub(v)
        return out
    if isinstance(value, list):
        items: list[Any] = []
        after_flag = False
        for item in value:
            if after_flag and isinstance(item, str | int | float) and not isinstance(item, bool):
                items.append(hidden(str(item)))
                after_flag = False
                continue
            after_flag = isinstance(item, str) and item.startswith("-") and "=" not in item
            after_flag = after_flag and is_secret_key(item)
            items.append(scrub(item))
        return items
    if isinstance(value, str):
        return scrub_text(value)
    return value
