"""Incident Timeline: the project package and the core app."""

from timeline.celery import app as celery_app

__all__ = ["celery_app"]
