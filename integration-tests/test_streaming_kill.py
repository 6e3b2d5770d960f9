"""A streaming query into a sparklance table, killed with SIGKILL again and again and restarted
from its checkpoint, leaves every input row in the table exactly once.

The input is a directory of Parquet files read one file per micro-batch (stream_child.py), so the
expected table is known row by row. The query first runs undisturbed over two files; then the
other files arrive and each of ten rounds starts a driver on the query's checkpoint and kills
the whole driver, Python and JVM, when a chosen kind of file first appears: a new offsets entry in
the checkpoint (a batch is planned), a data file (tasks are writing), a transaction file (the
commit is under way), a manifest (the commit landed; Spark has usually not yet recorded the batch
in its commit log, so the restart replays a batch the table already holds), or at a random moment.
After every kill the table must hold whole input files, each once; after the last run it must hold
all of them, read alike by Spark and pylance, and the batch ids the stream's commits carry in
their transactions must be those Spark recorded, each once: no batch landed twice.
"""
import json
import os
import random
import shutil
import time
from collections import Counter
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.parquet as pq

from conftest import table_path
from crash_watch import Driver

SEED = 20261202
CHILD = Path(__file__).with_name("stream_child.py")
FILES = 30
UNDISTURBED = 2
ROWS_PER_FILE = 40
WATCH_TIMEOUT = 180
# (trigger, delay in seconds): None draws a seeded delay of up to RANDOM_SPAN for "random" and
# up to 30 ms for the others.
PLAN = [("manifest", 0.0), ("offsets", 0.0), ("transaction", 0.0), ("data", None), ("manifest", 0.0),
        ("random", None), ("transaction", 0.0), ("manifest", None), ("data", None), ("random", None)]
RANDOM_SPAN = 6.0
SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.string())])


def _input_file(directory, n):
    ids = list(range(n * ROWS_PER_FILE, (n + 1) * ROWS_PER_FILE))
    # Half of each file is random text, so the data files are not all alike.
    rng = random.Random(n)
    payload = [f"{i}-" + "".join(rng.choice("abcdefghij") for _ in range(rng.randrange(1, 60))) for i in ids]
    pq.write_table(pa.table({"id": ids, "payload": payload}, schema=SCHEMA), directory / f"part-{n:03}.parquet")


def _names(directory, suffix=""):
    try:
        return {n for n in os.listdir(directory) if n.endswith(suffix)}
    except FileNotFoundError:
        return set()


def _watched(table, checkpoint):
    return {
        "offsets": _names(checkpoint / "offsets"),
        "data": _names(table / "data"),
        "transaction": _names(table / "_transactions"),
        "manifest": _names(table / "_versions", ".manifest"),
    }


def _batches_recorded(checkpoint):
    """The batches Spark's commit log records as done."""
    return len([n for n in _names(checkpoint / "commits") if n.isdigit()])


def _stream_batches(path):
    """The batch ids of the stream's commits, one per commit, from their transactions (auto
    compaction commits versions of its own between them)."""
    ds = lance.dataset(str(path))
    txns = ds.get_transactions(ds.version)
    return [int(t.transaction_properties["sparklance.txn.version"]) for t in txns
            if t is not None and (t.transaction_properties or {}).get("sparklance.txn.kind") == "stream"]


def _table_ids(path):
    ds = lance.dataset(str(path))
    return ds, ds.to_table(columns=["id"]).column("id").to_pylist()


def _check_whole_files(path, label):
    """The table holds whole input files, each row once; returns the files it holds and its version."""
    ds, ids = _table_ids(path)
    counts = Counter(ids)
    twice = sorted(i for i, c in counts.items() if c > 1)
    assert not twice, f"{label}: rows written twice, e.g. ids {twice[:10]}"
    files = Counter(i // ROWS_PER_FILE for i in ids)
    partial = {f: c for f, c in files.items() if c != ROWS_PER_FILE}
    assert not partial, f"{label}: input files only partly in the table: {partial}"
    return set(files), ds.version


def test_killed_stream_restarts_exactly_once(spark, warehouse, tmp_path):
    began = time.monotonic()
    rng = random.Random(SEED)
    draws = [rng.random() for _ in PLAN]
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lance.stream")
    scratch = tmp_path / "scratch"  # the drivers' temporary files and the class archive
    scratch.mkdir()
    archive = scratch / "driver-classes.jsa"
    drivers = []

    def prepare(name, files):
        ident = f"lance.stream.{name}"
        spark.sql(f"CREATE TABLE {ident} (id BIGINT, payload STRING)")
        source = tmp_path / f"{name}-input"
        source.mkdir()
        for n in files:
            _input_file(source, n)
        return ident, Path(table_path(warehouse, ident)), source, tmp_path / f"{name}-checkpoint"

    def driver(ident, source, checkpoint, label, *jvm_options):
        spec = json.dumps({"input": str(source), "checkpoint": str(checkpoint)})
        drivers.append(Driver(warehouse, scratch, ident, spec, tmp_path / f"{label}.log", jvm_options, child=CHILD))
        return drivers[-1]

    try:
        # The query runs undisturbed over the first files: one version per file. At exit its JVM
        # archives the classes it loaded, which lets every later driver start faster.
        ident, path, source, checkpoint = prepare("events", range(UNDISTURBED))
        first = driver(ident, source, checkpoint, "undisturbed", f"-XX:ArchiveClassesAtExit={archive}")
        first.wait_ready()
        first.run_to_end()
        first.wait_exit()
        files, _ = _check_whole_files(path, ident)
        assert files == set(range(UNDISTURBED)) and sorted(_stream_batches(path)) == list(range(UNDISTURBED))
        assert _batches_recorded(checkpoint) == UNDISTURBED
        shared = [f"-XX:SharedArchiveFile={archive}"] if archive.exists() else []
        for n in range(UNDISTURBED, FILES):
            _input_file(source, n)
        kills_began = time.monotonic()
        upcoming = driver(ident, source, checkpoint, "kill-00", *shared)
        replays, fired = 0, []
        for i, (trigger, delay) in enumerate(PLAN):
            current = upcoming
            waited = time.monotonic()
            current.wait_ready()
            waited = time.monotonic() - waited
            if delay is None:
                delay = draws[i] * (RANDOM_SPAN if trigger == "random" else 0.030)
            before = _watched(path, checkpoint)
            start = current._go()
            finished = False
            while trigger != "random" and not (_watched(path, checkpoint)[trigger] - before[trigger]):
                if current.proc.poll() is not None:
                    finished = True
                    break
                assert time.monotonic() - start < WATCH_TIMEOUT, f"no {trigger} file within {WATCH_TIMEOUT}s"
                time.sleep(0.001)
            # The next driver boots while this one runs on.
            upcoming = driver(ident, source, checkpoint, f"kill-{i + 1:02}", *shared)
            ran = time.monotonic() - start
            if finished:
                current._await_done()
            time.sleep(delay)
            current.kill()
            files, _ = _check_whole_files(path, f"after kill {i} ({trigger})")
            batches = _stream_batches(path)
            assert len(set(batches)) == len(batches), f"kill {i}: batches committed twice: {sorted(batches)}"
            committed, recorded = len(batches), _batches_recorded(checkpoint)
            # Spark records a batch after the sink's commit returned: at most the last one can be missing.
            assert committed in (recorded, recorded + 1), f"kill {i}: {committed} commits, {recorded} batches recorded"
            replays += committed - recorded
            fired.append(trigger)
            print(f"kill {i:2} {trigger:11} +{delay * 1000:6.1f} ms: {len(files):2} files in the table, "
                  f"{committed} commits, {recorded} batches recorded; waited {waited:.1f}s for the driver, {ran:.1f}s to the trigger")

        current = upcoming
        current.wait_ready()
        current.run_to_end()
        current.wait_exit()
    finally:
        for d in drivers:
            d.kill()
        shutil.rmtree(scratch)

    files, _ = _check_whole_files(path, "after the last run")
    assert files == set(range(FILES))
    ds = lance.dataset(str(path))
    ds.validate()
    assert ds.count_rows() == FILES * ROWS_PER_FILE
    assert sorted(r.id for r in spark.table(ident).select("id").collect()) == list(range(FILES * ROWS_PER_FILE))
    assert sorted(_stream_batches(path)) == list(range(_batches_recorded(checkpoint))), "a batch landed twice or was lost"
    print(f"seed {SEED}: set-up {kills_began - began:.0f}s, {len(PLAN)} kills {time.monotonic() - kills_began:.0f}s; "
          f"{replays} kills after a commit Spark had not recorded; triggers {dict(Counter(fired))}")
    # The window that makes exactly-once hard must have been hit.
    assert replays >= 1
