"""The SQL and Python snippets of README.md and docs/*.md run as they are written (the convention is
at the top of docs/development.md): one child process with its own session, configured as the
quickstart configures it, and a fresh warehouse runs every page's snippets in order (docs_snippets.py);
each page is a test here."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

import docs_snippets

ROOT = Path(__file__).resolve().parent.parent
PAGES = [str(p.relative_to(ROOT)) for p in docs_snippets.pages(ROOT)]


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    work = tmp_path_factory.mktemp("docs-snippets")
    results = work / "results.json"
    child = subprocess.run([sys.executable, str(Path(__file__).parent / "docs_snippets.py"), str(ROOT), str(work), str(results)],
                           capture_output=True, text=True, timeout=600)
    if child.returncode != 0 or not results.exists():
        pytest.fail(f"the snippet runner failed ({child.returncode}):\n{child.stdout[-3000:]}\n{child.stderr[-6000:]}")
    return json.loads(results.read_text())


def test_directives_are_well_formed_and_give_reasons():
    for page in docs_snippets.pages(ROOT):
        for block in docs_snippets.blocks(page, ROOT):  # raises on a malformed or misplaced directive
            assert block.skip is None or block.skip.strip(), block.where()


def test_sql_statements_split_outside_quotes_and_comments():
    assert docs_snippets.sql_statements("SELECT 1; -- a; b\nSELECT ';' AS s;\nSHOW TABLES IN lance.db") == \
        ["SELECT 1", "SELECT ';' AS s", "SHOW TABLES IN lance.db"]


@pytest.mark.parametrize("page", PAGES)
def test_page_snippets_run(outcome, page):
    assert page in outcome
    if outcome[page] is not None:
        pytest.fail(outcome[page], pytrace=False)
