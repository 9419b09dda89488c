"""A module named `test_*` holds tests; helpers shared by tests are named for what they are (`enginekit.py`,
`requesterkit.py`, ...), so a reader of the listing knows which files pytest runs and which they import."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def holds_tests(path: Path) -> bool:
    tree = ast.parse(path.read_text("utf-8"))
    return any((isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"))
               or (isinstance(node, ast.ClassDef) and node.name.startswith("Test")) for node in tree.body)


def test_every_test_module_holds_tests():
    modules = sorted(TESTS.rglob("test_*.py"))
    assert TESTS / "test_suite_names.py" in modules
    empty = [str(path.relative_to(TESTS)) for path in modules if not holds_tests(path)]
    assert empty == [], "modules named test_* without a test (name a helper for what it is):\n" + "\n".join(empty)


def test_a_helper_module_is_told_apart():
    assert not holds_tests(TESTS / "enginekit.py") and holds_tests(Path(__file__))
