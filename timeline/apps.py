from django.apps import AppConfig


class TimelineConfig(AppConfig):
    name = "timeline"
    verbose_name = "Incident Timeline"

    def ready(self) -> None:
        from django.conf import settings
        from django.db.backends.signals import connection_created

        from ingest.parsers import secrets
        from timeline import (
            proofs,
            signals,  # noqa: F401  (connects the receivers)
        )

        # This process's own writes forget the proofs it keeps (timeline.proofs).
        connection_created.connect(proofs.watch_connection, dispatch_uid="timeline.proofs")

        # Secrets in the evidence are fingerprinted under this deployment's own key.
        secrets.set_key(settings.SECRET_KEY.encode())
