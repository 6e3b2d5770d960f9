"""Oracle for vector indices sparklance builds: `make PATH [stable]` writes a seeded clustered table of
2,000 x 16 float32 vectors (fragments of 1,000); `check PATH NAME METRIC PARTITIONS` queries it with
pylance through the index named NAME and exactly, then appends 500 rows, runs optimize_indices and
queries again; prints one JSON line."""
import json
import sys

import lance
import numpy as np
import pyarrow as pa

DIM = 16


def vectors(n, seed):
    rng = np.random.default_rng(seed)
    centers = np.random.default_rng(7).standard_normal((20, DIM)).astype("float32") * 4
    return (centers[rng.integers(0, 20, n)] + rng.standard_normal((n, DIM))).astype("float32")


def table(v, first):
    return pa.table({"id": pa.array(range(first, first + len(v)), pa.int64()),
                     "vec": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM)})


def recall(ds, name, metric, partitions, refine):
    queries = vectors(20, 99)
    hits = 0
    plan = ""
    for q in queries:
        near = {"column": "vec", "q": q, "k": 10, "metric": metric, "nprobes": partitions}
        if refine:
            near["refine_factor"] = 10
        got = ds.to_table(nearest=near, columns=["id"])["id"].to_pylist()
        exact = ds.to_table(nearest={"column": "vec", "q": q, "k": 10, "metric": metric, "use_index": False},
                            columns=["id"])["id"].to_pylist()
        hits += len(set(got) & set(exact))
        plan = ds.scanner(nearest=near, columns=["id"]).explain_plan(True)
    return hits / (10.0 * len(queries)), "ANNIvfPartition" in plan and "ANNSubIndex" in plan


def main():
    action, path = sys.argv[1], sys.argv[2]
    if action == "make":
        stable = len(sys.argv) > 3 and sys.argv[3] == "true"
        lance.write_dataset(table(vectors(2000, 1), 0), path, max_rows_per_file=1000,
                            enable_stable_row_ids=stable)
        return
    name, metric, partitions = sys.argv[3], sys.argv[4], int(sys.argv[5])
    ds = lance.dataset(path)
    ds.validate()
    refine = "IVF_FLAT" not in sys.argv[6:]
    out = {}
    out["recall"], out["used"] = recall(ds, name, metric, partitions, refine)
    stats = ds.stats.index_stats(name)
    out["type"] = stats["index_type"]
    out["segments"] = len(stats["indices"])
    ds = lance.write_dataset(table(vectors(500, 2), 2000), path, mode="append")
    ds.optimize.optimize_indices()
    ds = lance.dataset(path)
    ds.validate()
    out["recall_after_optimize"], out["used_after_optimize"] = recall(ds, name, metric, partitions, refine)
    covered = set()
    for i in ds.list_indices():
        if i["name"] == name:
            covered |= set(i["fragment_ids"])
    out["covered_after_optimize"] = sorted(covered)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
