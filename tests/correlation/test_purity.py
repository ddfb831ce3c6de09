import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "timeline" / "correlation"
VOCABULARY = ROOT / "evidence"
# The engine is pure: no Django, and nothing that reaches files, processes or the network.
FORBIDDEN = {"django", "subprocess", "socket", "urllib", "http", "requests", "shutil", "psycopg"}


def _imported_roots(source: str) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_correlation_package_imports_no_django_and_no_io_modules():
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) >= 7

    offending = {
        path.name: sorted(_imported_roots(path.read_text(encoding="utf-8")) & FORBIDDEN)
        for path in modules
    }

    assert {name: found for name, found in offending.items() if found} == {}


def test_the_correlation_package_never_calls_open():
    calls = [
        path.name
        for path in PACKAGE.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open"
    ]

    assert calls == []


def test_the_import_walker_sees_a_django_import():
    assert "django" in _imported_roots("from django.db import models\nimport numpy")


def test_the_evidence_vocabulary_imports_nothing_but_the_standard_library():
    modules = sorted(VOCABULARY.glob("*.py"))
    assert modules

    imported = set().union(*(_imported_roots(p.read_text(encoding="utf-8")) for p in modules))

    assert imported <= {"__future__", "dataclasses", "enum", "typing"}


PARSERS = ROOT / "ingest" / "parsers"


def test_the_parsers_import_no_django_and_no_io_modules():
    modules = sorted(PARSERS.rglob("*.py"))
    assert len(modules) >= 15

    offending = {
        str(path.relative_to(PARSERS)): sorted(
            _imported_roots(path.read_text(encoding="utf-8")) & FORBIDDEN
        )
        for path in modules
    }

    assert {name: found for name, found in offending.items() if found} == {}


def test_the_parsers_never_call_open():
    calls = [
        path.name
        for path in PARSERS.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open"
    ]

    assert calls == []
