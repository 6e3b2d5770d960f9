"""The docs' runnable snippets (convention: the top of docs/development.md) and the process that runs them.

Usage: docs_snippets.py ROOT WORKDIR RESULTS_JSON

Extracts every ```python and ```sql block of ROOT/README.md and ROOT/docs/*.md (fences indented
inside list items too) that no `<!-- test: skip (reason) -->` line precedes, boots one local
PySpark session configured as the README's quickstart configures it, over a warehouse in WORKDIR,
and runs each page's blocks in order: Python blocks in one namespace per page holding `spark`
and `sparklance`, SQL
blocks statement by statement (each collected, so queries run too). Every page starts on an empty
namespace `lance.db`, with no temporary views and the session's settings reset; `/tmp/` in a
snippet means WORKDIR. The first error stops its page. Writes {page: null | error text} to
RESULTS_JSON. A process of its own, so that the snippets get a session and warehouse of their
own and cannot change the shared session of the other test modules.
"""
import json
import re
import sys
import time
import traceback
from pathlib import Path

RUNNABLE = ("python", "sql")
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[^`\s]*)[^`]*$")
DIRECTIVE = re.compile(r"^\s*<!--\s*test:(?P<rest>.*?)-->\s*$")
SKIP = re.compile(r"^\s*skip\s*\((?P<reason>[^)]*\S[^)]*)\)\s*$")


class Block:
    def __init__(self, page, line, lang, code, skip):
        self.page, self.line, self.lang, self.code, self.skip = page, line, lang, code, skip

    def where(self):
        return f"{self.page}:{self.line}"


def pages(root):
    """README.md, then the docs pages by name."""
    root = Path(root)
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def blocks(path, root):
    """The fenced blocks of one page, in order; a malformed `<!-- test: ... -->` line raises."""
    name = str(Path(path).relative_to(root))
    lines = Path(path).read_text().split("\n")
    found, i, pending_skip = [], 0, None
    while i < len(lines):
        directive = DIRECTIVE.match(lines[i])
        fence = FENCE.match(lines[i])
        if pending_skip is not None and not fence:
            raise ValueError(f"{name}:{i}: a skip directive must be the line right before a fenced block")
        if directive:
            skip = SKIP.match(directive.group("rest"))
            if not skip:
                raise ValueError(f"{name}:{i + 1}: a test directive is `<!-- test: skip (reason) -->`, not {lines[i]!r}")
            pending_skip = skip.group("reason")
        elif fence:
            indent, start, body = fence.group("indent"), i, []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
                i += 1
            found.append(Block(name, start + 1, fence.group("info"), "\n".join(body) + "\n", pending_skip))
            pending_skip = None
        i += 1
    return found


def runnable(path, root):
    return [b for b in blocks(path, root) if b.lang in RUNNABLE and b.skip is None]


def sql_statements(code):
    """The statements of a SQL block: `--` comments dropped, split at `;` outside quotes."""
    statements, current, quote = [], [], None
    for line in code.split("\n"):
        j = 0
        while j < len(line):
            c = line[j]
            if quote:
                current.append(c)
                if c == quote:
                    quote = None
            elif c in "'`\"":
                quote = c
                current.append(c)
            elif line.startswith("--", j):
                break
            elif c == ";":
                statements.append("".join(current).strip())
                current = []
            else:
                current.append(c)
            j += 1
        current.append("\n")
    statements.append("".join(current).strip())
    return [s for s in statements if s]


def reset(spark):
    """An empty `lance.db`, no temporary views, the session's settings as they were at start."""
    spark.sql("DROP NAMESPACE IF EXISTS lance.db CASCADE")
    spark.sql("CREATE NAMESPACE lance.db")
    for view in spark.catalog.listTables():
        if view.isTemporary:
            spark.catalog.dropTempView(view.name)
    spark.sql("RESET")


def run_page(spark, path, root, workdir):
    reset(spark)
    import sparklance
    namespace = {"spark": spark, "sparklance": sparklance, "__name__": "__docs__"}
    for block in runnable(path, root):
        code = block.code.replace("/tmp/", f"{workdir}/")
        statement = code
        try:
            if block.lang == "python":
                exec(compile(code, block.where(), "exec"), namespace)
            else:
                for statement in sql_statements(code):
                    spark.sql(statement).collect()
        except Exception:
            return f"{block.where()} ({block.lang} block) failed at:\n{statement}\n{traceback.format_exc()}"
    return None


def main():
    root, workdir, results = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    from pyspark.sql import SparkSession
    import sparklance
    # As the quickstart configures it (the same warehouse, under WORKDIR), plus settings that only
    # make a small local run quicker and quieter: few shuffle partitions, and a JVM that compiles
    # with C1 only (the run is short; C2 would spend the shared cores compiling what runs once).
    spark = (sparklance.configure(SparkSession.builder.master("local[2]"), warehouse=f"{workdir}/wh")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    outcome = {}
    for path in pages(root):
        started = time.monotonic()
        outcome[str(path.relative_to(root))] = run_page(spark, path, root, workdir)
        print(f"{path.relative_to(root)}: {time.monotonic() - started:.1f}s", file=sys.stderr, flush=True)
    Path(results).write_text(json.dumps(outcome))
    spark.stop()


if __name__ == "__main__":
    main()
