"""Ingest writes, one module per step. Every entry point (upload page, CLI, push API, demo,
``analyze PATH``, a future Prometheus pull) goes through ``orchestration``:

- ``orchestration``: bundle_ingest / files_ingest / records_ingest: register, apply the
  bundle's marks, load (here or on the workers), then ask for an analysis.
- ``workers``: loads queued on Celery by id, what a worker does with one, waiting for them.
- ``storage``: uploads kept under UPLOAD_ROOT by their sha256, registered as artifacts; a
  registration writes into a stage (``UPLOAD_ROOT/.tmp-*``) published once its rows commit.
- ``archives``: .zip / .tar.gz extraction within safety limits.
- ``bundles``: a bundle directory walked into artifacts; incident.toml read.
- ``loading``: one artifact parsed and loaded in one transaction.
- ``artifacts``: an artifact's run state (claimed, progress, done, failed).
- ``reaper``: loads and analyses left running by a dead worker, and analysis requests that
  never reached the broker, queued again (beat).
- ``sweep``: files under UPLOAD_ROOT no artifact points to, removed (beat, ``uploads_sweep``).

The same bytes twice are one artifact; a bad file writes nothing and records
``file:line: what was expected`` on its row.
"""


class IngestError(Exception):
    """A request to ingest that cannot be carried out (bad path, archive, limits)."""
