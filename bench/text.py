"""INVERTED (full-text) index build benchmark: sparklance's CREATE INDEX ... USING inverted against
pylance's create_scalar_index(column, "INVERTED") on the same table.

The table: ROWS short documents (5 to 12 words drawn from a Zipf-like vocabulary of VOCAB words,
word r with weight 1/r) in FRAGMENTS fragments, written by pylance. Each round builds
sparklance's index (Spark local[2], one partition a task) then pylance's (the systems take turns,
each index dropped untimed before its build); 1 warm-up + RUNS timed rounds, median, and the ratio
sparklance / pylance. The two indices answer a few queries alike (checked once).

Then query latency on pylance's index: 21 queries of 1 to 3 words, 7 each of rare words (ranks
above 5,000), mid (ranks 100 to 1,000) and common ones (ranks 1 to 20); sparklance's
`text_search(..., k => 10)` collected against pylance's `to_table(full_text_query=q, limit=10)`,
taking turns query by query (3 warm-up + 5 timed rounds), the median per query and, per class,
the median of those and the ratio. Every query runs once, its answers checked equal (scores),
before any is timed.

Run: .venv/bin/python bench/text.py [--rows 1000000] [--runs 3] [--skip-build | --skip-queries]"""
import argparse
import statistics
import time

import lance
import numpy as np
import pyarrow as pa

from common import print_table, scratch_dir, spark_session, timed_in_turns


def documents(rows, vocab, seed=11):
    rnd = np.random.default_rng(seed)
    words = np.array([word(r) for r in range(1, vocab + 1)], dtype=object)
    weights = 1.0 / np.arange(1, vocab + 1)
    picks = rnd.choice(vocab, size=rows * 12, p=weights / weights.sum())
    lengths = rnd.integers(5, 13, size=rows)
    out, at = [], 0
    for n in lengths:
        out.append(" ".join(words[picks[at:at + n]]))
        at += n
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--vocab", type=int, default=50_000)
    parser.add_argument("--fragments", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-build", action="store_true", help="only the query latency (pylance builds the index)")
    parser.add_argument("--skip-queries", action="store_true", help="only the build times")
    args = parser.parse_args()
    warehouse = scratch_dir("sparklance-text-bench-")
    spark = spark_session(warehouse)
    path = str(warehouse / "t.lance")
    docs = documents(args.rows, args.vocab)
    lance.write_dataset(pa.table({"id": pa.array(range(args.rows), pa.int64()), "text": pa.array(docs)}), path,
                        max_rows_per_file=-(-args.rows // args.fragments))
    table = f"lance.`{path}`"
    print(f"{args.rows} documents in {len(lance.dataset(path).get_fragments())} fragments")

    def drop():
        if any(i.name == "text_idx" for i in lance.dataset(path).describe_indices()):
            spark.sql(f"DROP INDEX text_idx ON {table}")

    def sparklance_build():
        drop()
        start = time.perf_counter()
        spark.sql(f"CREATE INDEX text_idx ON {table} USING inverted (text)")
        return time.perf_counter() - start

    def pylance_build():
        drop()
        ds = lance.dataset(path)
        start = time.perf_counter()
        ds.create_scalar_index("text", "INVERTED", name="text_idx")
        return time.perf_counter() - start

    def answers():
        ds = lance.dataset(path)
        return [ds.to_table(full_text_query=q, columns=["id"], limit=10)["_score"].to_pylist()
                for q in ("w1x", "w5x w17x", "running7 w3x", "w49999x")]

    if args.skip_build:
        lance.dataset(path).create_scalar_index("text", "INVERTED", name="text_idx")
    else:
        build_times(args, sparklance_build, pylance_build, answers)
    if not args.skip_queries:
        query_latency(spark, path, args.vocab)


def word(rank):
    return f"w{rank}x" if rank % 7 else f"running{rank}"


def query_latency(spark, path, vocab):
    rnd = np.random.default_rng(5)
    ranks = {"rare": (5_000, vocab), "mid": (100, 1_000), "common": (1, 20)}
    queries = {c: [" ".join(word(int(r)) for r in rnd.integers(lo, hi + 1, size=1 + i % 3)) for i in range(7)]
               for c, (lo, hi) in ranks.items()}
    ds = lance.dataset(path)

    def ours(q):
        return spark.sql(f"SELECT id, _score FROM text_search('lance.`{path}`', 'text', '{q}', 10)").collect()

    def theirs(q):
        return ds.to_table(full_text_query=q, columns=["id"], limit=10)

    # Every query once, its answers checked, before any is timed: the first class timed had
    # otherwise run on a JIT the later ones found warmer.
    for q in (q for qs in queries.values() for q in qs):
        got = [r["_score"] for r in ours(q)]
        want = sorted(theirs(q)["_score"].to_pylist(), reverse=True)
        assert np.allclose(got, want, rtol=1e-5), (q, got, want)
    rows = []
    for c, qs in queries.items():
        times = {"sparklance": [], "pylance": []}
        for q in qs:
            t = timed_in_turns({"sparklance": lambda: ours(q), "pylance": lambda: theirs(q)}, runs=5, warmup=3)
            for system in times:
                times[system].append(t[system])
            print(f"{c:6} {q:32} sparklance {t['sparklance'] * 1e3:7.1f} ms  pylance {t['pylance'] * 1e3:6.1f} ms", flush=True)
        ours_ms, theirs_ms = statistics.median(times["sparklance"]) * 1e3, statistics.median(times["pylance"]) * 1e3
        rows.append((c, f"{ours_ms:.1f}", f"{theirs_ms:.1f}", f"{ours_ms / theirs_ms:.1f}x"))
    print_table("text_search k=10 vs pylance full_text_query limit=10, median ms per query class",
                ("class", "sparklance ms", "pylance ms", "ratio"), rows)


def build_times(args, sparklance_build, pylance_build, answers):
    samples = {"sparklance": [], "pylance": []}
    checked = {}
    for i in range(1 + args.runs):
        for system, build in (("sparklance", sparklance_build), ("pylance", pylance_build)):
            elapsed = build()
            if i > 0:
                samples[system].append(elapsed)
            elif system not in checked:
                checked[system] = answers()
    assert checked["sparklance"] == checked["pylance"], checked
    ours = statistics.median(samples["sparklance"])
    theirs = statistics.median(samples["pylance"])
    print_table(f"INVERTED index build, {args.rows} documents, median of {args.runs}",
                ("index", "sparklance s", "pylance s", "ratio"),
                [("inverted (text)", f"{ours:.3f}", f"{theirs:.3f}", f"{ours / theirs:.2f}x")])


if __name__ == "__main__":
    main()
