"""Push API (token auth)."""

urlpatterns: list = []  # type: ignore[type-arg]
