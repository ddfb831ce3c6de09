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
                "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "--hf-token"):  # fmt: skip
        assert is_secret_key(key), key
    for key in ("--max-new-tokens", "--tokenizer-path", "SGLANG_MAX_DISPATCH_TOKENS_PER_RANK",
                "--skip-tokenizer-init", "token_usage", "--tp"):  # fmt: skip
        assert not is_secret_key(key), key


def test_a_secret_keeps_one_fingerprint_for_every_spelling_and_not_set_stays_not_set() -> None:
    assert hidden(KEY) == hidden(f"'{KEY}'") == hidden(f'"{KEY}"') != hidden(OLD_KEY)
    assert KEY not in (hidden(KEY) or "") and hidden(KEY).startswith("(hidden; sha256 ")
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
