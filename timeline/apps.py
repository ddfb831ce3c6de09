from django.apps import AppConfig


class TimelineConfig(AppConfig):
    name = "timeline"
    verbose_name = "Incident Timeline"

    def ready(self) -> None:
        from django.conf import settings

        from ingest.parsers import secrets
        from timeline import signals  # noqa: F401  (connects the receivers)

        # Secrets in the evidence are fingerprinted under this deployment's own key.
        secrets.set_key(settings.SECRET_KEY.encode())
