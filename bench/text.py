"""INVERTED (full-text) index build benchmark: sparklance's CREATE INDEX ... USING inverted against
pylance's create_scalar_index(column, "INVERTED") on the same table.

The table: ROWS short documents (5 to 12 words drawn from a Zipf-like vocabulary of VOCAB words,
word r with weight 1/r) in FRAGMENTS fragments, written by pylance. Each round builds
sparklance's index (Spark local[2], one partition a task) then pylance's (the systems take turns,
each index dropped untimed before its build); 1 warm-up + RUNS timed rounds, median, and the ratio
sparklance / pylance. The two indices answer a few queries alike (checked once).

Run: .venv/bin/python bench/text.py [--rows 1000000] [--runs 3]"""
import argparse
import statistics
import time

import lance
import numpy as np
import pyarrow as pa

from common import print_table, scratch_dir, spark_session


def documents(rows, vocab, seed=11):
    rnd = np.random.default_rng(seed)
    words = np.array([f"w{r}x" if r % 7 else f"running{r}" for r in range(1, vocab + 1)], dtype=object)
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
