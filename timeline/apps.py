from django.apps import AppConfig


class TimelineConfig(AppConfig):
    name = "timeline"
    verbose_name = "Incident Timeline"

    def ready(self) -> None:
        from timeline import signals  # noqa: F401  (connects the receivers)
