"""The correlation engine is pure: its tests need no Django settings, database or uploads.

tests/conftest.py has an autouse fixture that takes pytest-django's ``settings``; overriding it
here by name lets these tests run with ``-p no:django``.
"""

from __future__ import annotations
