"""A token or a password in the evidence (a doc's ``export HF_TOKEN=...``, a launch's
``--api-key``, the server's own ``api_key='...'`` in its ServerArgs line, a repository's .env)
never reaches the database, the pages or the postmortem export: only a fingerprint of it, the
same for every spelling of one value, so a changed secret is still a change. Real Postgres."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import connection
from django.urls import reverse

from ingest.parsers.secrets import hidden, is_secret_key
from ingest.parsers.serverargs import read as read_server_args
from ingest.parsers.types import ConfigChangeRecord, Setting
from tests.conftest import ingest_folder
from timeline.models import Event

HF = "hf_SuperSecret123"
KEY = "sk-LaunchSecret456"
OLD_KEY = "sk-OldSecret789"


def test_secret_keys_are_named_by_their_last_word() -> None:
    for key in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "--api-key", "api_key", "admin_api_key",
                "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "--hf-token",
                "server.api_key", "auth.token", "db.password", "openai.apiKey", "hfToken",
                "GITHUB_TOKEN"):  # fmt: skip
        assert is_secret_key(key), key
    # SGLang's own fields that end in "token" are tuning, not secrets.
    for key in ("--max-new-tokens", "--tokenizer-path", "SGLANG_MAX_DISPATCH_TOKENS_PER_RANK",
                "--skip-tokenizer-init", "token_usage", "--tp",
                "kt_max_deferred_experts_per_token", "bucket_time_to_first_token"):  # fmt: skip
        assert not is_secret_key(key), key


def test_a_fingerprint_is_keyed_so_a_short_password_cannot_be_looked_up() -> None:
    import hashlib

    assert "f52fbd32b2b3" not in (hidden("hunter2") or "")  # sha256("hunter2")[:12]
    assert hashlib.sha256(b"hunter2").hexdigest()[:12] == "f52fbd32b2b3"


def test_secrets_inside_lists_text_and_expansions_are_hidden_too() -> None:
    from ingest.parsers.configfiles import extract_settings
    from ingest.parsers.secrets import scrub_text
    from ingest.parsers.shell import shell_settings

    compose = (
        "services:\n  sglang:\n"
        f'    environment: ["HF_TOKEN={HF}", "B=2"]\n'
        f'    command: [python3, -m, sglang.launch_server, --api-key, "{KEY}", --tp, "8"]\n'
    )
    k8s = f"spec:\n  containers:\n  - name: s\n    env:\n    - name: HF_TOKEN\n      value: {HF}\n"
    json_conf = f'{{"server": {{"api_key": "{KEY}"}}, "openai": {{"apiKey": "{KEY}"}}}}'
    for name, text in (("compose.yaml", compose), ("k8s/d.yaml", k8s), ("conf.json", json_conf)):
        stored = [(x.key, x.value, x.condition) for x in extract_settings(name, text)]
        assert stored and HF not in repr(stored) and KEY not in repr(stored), (name, stored)
    script = (
        f"export HF_TOKEN={HF}\n"
        'export MODEL_URL="https://user:${HF_TOKEN}@hf.co/m"\n'
        f'if [ "$API_KEY" = "{KEY}" ]; then\n'
        "  python3 -m sglang.launch_server --model-path $MODEL_URL --tp 8\nfi\n"
    )
    stored = [(x.key, x.value, x.condition) for x in shell_settings(script, where="s.sh")]
    assert ("--tp", "8") in [(k, v) for k, v, _ in stored]
    assert HF not in repr(stored) and KEY not in repr(stored), stored
    note = scrub_text(f"2026-11-20 13:00 set HF_TOKEN={HF} and restart with --api-key {KEY}")
    assert HF not in note and KEY not in note and "set HF_TOKEN=(hidden; " in note


def test_a_secret_keeps_one_fingerprint_for_every_spelling_and_not_set_stays_not_set() -> None:
    assert hidden(KEY) == hidden(f"'{KEY}'") == hidden(f'"{KEY}"') != hidden(OLD_KEY)
    assert hidden(KEY).startswith("(hidden; ")  # type: ignore[union-attr]
    assert hidden(hidden(KEY)) == hidden(KEY)
    for unset in (None, "None", "", "null"):
        assert hidden(unset) == unset
    assert Setting("HF_TOKEN", HF, "env", "d.md:3").value == hidden(HF)
    change = ConfigChangeRecord("--api-key", OLD_KEY, KEY, None, "flag", "doc", "d.md")  # type: ignore[arg-type]
    assert (change.old, change.new) == (hidden(OLD_KEY), hidden(KEY))
    assert read_server_args(f"ServerArgs(model_path='/m', api_key='{KEY}', tp_size=8)") == {
        "model_path": "'/m'",
        "api_key": hidden(KEY),
        "tp_size": "8",
    }


def _bundle(folder: Path) -> Path:
    folder.mkdir()
    (folder / "DSV4_DEPLOY.md").write_text(
        "# DSV4 deployment\n\n"
        "```bash\n"
        f"export HF_TOKEN={HF}\n"
        "export SGLANG_ENABLE_PDL=1\n"
        f"python3 -m sglang.launch_server --model-path /m --api-key {KEY} --tp 8\n"
        "```\n\n"
        "## Changelog\n\n"
        "- 2026-11-20 13:00 first deployment\n"
        f"- 2026-11-20 13:30 set HF_TOKEN={HF} and --api-key {KEY}\n"
    )
    (folder / "server.log").write_text(
        f"[2026-11-20 14:00:00] server_args=ServerArgs(model_path='/m', api_key='{KEY}', "
        "tp_size=8)\n"
        "[2026-11-20 14:00:30] The server is fired up and ready to roll!\n"
        "[2026-11-20 14:01:00 TP0] Decode batch. #running-req: 1, #token: 10, token usage: "
        "0.01, gen throughput (token/s): 40.00, #queue-req: 0\n"
    )
    return folder


def test_secrets_in_docs_and_logs_reach_neither_the_database_nor_the_export(
    db: None, team: Any, user: Any, client: Any, tmp_path: Path
) -> None:
    incident = ingest_folder(_bundle(tmp_path / "bundle"), "secrets", team)
    with connection.cursor() as cur:
        cur.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
        )
        tables = [row[0] for row in cur.fetchall()]
        found = []
        for table in tables:
            cur.execute(
                f'SELECT count(*) FROM "{table}" t WHERE t::text LIKE %s OR t::text LIKE %s',  # noqa: S608
                [f"%{HF}%", f"%{KEY}%"],
            )
            if cur.fetchone()[0]:
                found.append(table)
    assert found == []
    # What was stored is the fingerprint: the doc's and the running server's api key are one.
    doc = Event.objects.get(incident=incident, kind="doc_revision")
    settings = {s["key"]: s["value"] for s in doc.attrs["settings"]}
    assert settings["HF_TOKEN"] == hidden(HF) and settings["--api-key"] == hidden(KEY)
    start = Event.objects.get(incident=incident, kind="server_start")
    assert start.attrs["server_args"]["api_key"] == hidden(KEY)
    client.force_login(user)
    for fmt in ("md", "json", "html"):
        response = client.get(reverse("postmortem_export", args=[incident.slug, fmt]))
        assert response.status_code == 200
        assert HF.encode() not in response.content and KEY.encode() not in response.content
    page = client.get(reverse("incident_timeline", args=[incident.slug]))
    assert page.status_code == 200 and KEY.encode() not in page.content


def test_a_pushed_event_keeps_no_secret_in_its_attrs_title_or_body() -> None:
    """The push API builds EventRecords from a client's JSON: a pushed server start's
    server_args and env are the live config, and are fingerprinted like a log's."""
    import datetime as dt

    from ingest.parsers.types import EventRecord

    event = EventRecord(
        kind="server_start",  # type: ignore[arg-type]
        lane="live_config",  # type: ignore[arg-type]
        at=dt.datetime(2026, 11, 20, tzinfo=dt.UTC),
        key="k",
        title=f"restarted with --api-key {KEY}",
        body=f"HF_TOKEN={HF}",
        attrs={"server_args": {"api_key": f"'{KEY}'", "tp_size": "8"}, "env": {"HF_TOKEN": HF}},
    )
    assert KEY not in repr(event) and HF not in repr(event)
    assert event.attrs["server_args"] == {"api_key": hidden(KEY), "tp_size": "8"}
    assert event.attrs["env"] == {"HF_TOKEN": hidden(HF)}
