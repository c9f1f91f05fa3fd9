"""Benchmarks never import the test suite: what both need lives in graphrag_assets_testkit."""

from __future__ import annotations

import ast

from graphrag_assets_testkit.projects import REPO

TESTS = "graphrag_assets_tests"


def imported_modules(source: str) -> set[str]:
    """Every module a Python source imports, at any depth (function-level imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def imports_tests(source: str) -> bool:
    return any(name == TESTS or name.startswith(TESTS + ".") for name in imported_modules(source))


def test_the_check_sees_imports_of_the_tests_wherever_they_are() -> None:
    assert imports_tests("from graphrag_assets_tests.conftest import make_project\n")
    assert imports_tests("def f():\n    import graphrag_assets_tests.shared_data as s\n")
    assert not imports_tests("from graphrag_assets_testkit.projects import make_project\n")
    assert not imports_tests('"""reuses graphrag_assets_tests/test_x.py"""\n')


def test_no_benchmark_imports_the_test_suite() -> None:
    offenders = [
        path.name for path in sorted((REPO / "bench").glob("*.py")) if imports_tests(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], f"these benchmarks import {TESTS}; import from graphrag_assets_testkit instead"
