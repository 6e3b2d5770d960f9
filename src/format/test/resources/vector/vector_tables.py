"""Writes small vector tables with pylance 14.0.2, builds IVF indices on them, and records pylance's
`nearest` answers for VectorSearchSuite: cases.json under the output directory, one case a query.
Usage: vector_tables.py OUT_DIR"""
import json
import os
import sys

import lance
import numpy as np
import pyarrow as pa

out = sys.argv[1]
DIM, ROWS, PER_FILE, K = 16, 3000, 1000, 10
rng = np.random.default_rng(7)
centers = rng.normal(0, 4, (12, DIM))


def vectors(n, seed):
    r = np.random.default_rng(seed)
    return (centers[r.integers(0, len(centers), n)] + r.normal(0, 1, (n, DIM))).astype(np.float32)


def table(ids, vecs):
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), DIM)})


queries = vectors(4, 99)
queries[3] = rng.normal(0, 6, DIM)  # far from every cluster
cases = []


def record(name, ds, metric=None, auto=False, where="id % 3 = 0"):
    allowed = ds.to_table(columns=["id"], filter=where, with_row_id=True)["_rowid"].to_pylist()
    params = [(1, None, False), (3, None, False), (2, 2, False), (2, 1, True)]
    if auto:
        # Auto probing; with a selective prefilter it searches more partitions until k rows pass.
        params += [(None, None, False), (None, None, True)]
    for qi, q in enumerate(queries):
        for nprobes, refine, filtered in params:
            nearest = {"column": "vec", "q": q, "k": K}
            if nprobes is not None:
                nearest["nprobes"] = nprobes
            if refine is not None:
                nearest["refine_factor"] = refine
            if metric is not None:
                nearest["metric"] = metric
            t = ds.to_table(columns=["id", "_distance"], nearest=nearest, with_row_id=True,
                            filter=where if filtered else None, prefilter=filtered)
            cases.append({"table": name, "version": ds.version, "query": [float(x) for x in q], "k": K,
                          "nprobes": nprobes, "refine": refine, "metric": metric,
                          "filter": allowed if filtered else None,
                          "ids": t["_rowid"].to_pylist(), "distances": [float(d) for d in t["_distance"].to_pylist()]})


def build(name, index_type, metric, storage, stable=False, bits=8, sub_vectors=4):
    path = os.path.join(out, name)
    ds = lance.write_dataset(table(np.arange(ROWS), vectors(ROWS, 1)), path, max_rows_per_file=PER_FILE,
                             data_storage_version=storage, enable_stable_row_ids=stable)
    opts = {"num_sub_vectors": sub_vectors, "num_bits": bits} if index_type == "IVF_PQ" else {}
    ds.create_index("vec", index_type, metric=metric, num_partitions=8, **opts)
    record(name, ds, auto=True)
    ds.delete("id % 7 = 1 or (id >= 1100 and id < 1400)")
    record(name, ds)
    ds = lance.write_dataset(table(np.arange(ROWS, ROWS + 500), vectors(500, 2)), path, mode="append")
    record(name, ds)
    if name == "flat_l2":
        record(name, ds, metric="cosine")


build("flat_l2", "IVF_FLAT", "l2", "2.0")
build("flat_cosine", "IVF_FLAT", "cosine", "2.1")
build("flat_dot", "IVF_FLAT", "dot", "2.2")
build("pq_l2", "IVF_PQ", "l2", "2.1")
build("pq_cosine", "IVF_PQ", "cosine", "2.2")
build("pq_dot", "IVF_PQ", "dot", "2.0")
build("sq_l2", "IVF_SQ", "l2", "2.2")
build("sq_cosine", "IVF_SQ", "cosine", "2.0")
build("sq_dot", "IVF_SQ", "dot", "2.1")
build("pq_l2_stable", "IVF_PQ", "l2", "2.1", stable=True)
build("flat_cosine_stable", "IVF_FLAT", "cosine", "2.2", stable=True)

# 4-bit codes: 16 values a sub-vector; 8 sub-vectors keep ties of distances rare enough.
build("pq4_l2", "IVF_PQ", "l2", "2.1", bits=4, sub_vectors=8)

# Two segments (a delta from optimize_indices), each probing its own centroids; then an uncovered
# fragment; Auto with a filter only 1 row in 40 passes.
path = os.path.join(out, "segments")
ds = lance.write_dataset(table(np.arange(ROWS), vectors(ROWS, 1)), path, max_rows_per_file=PER_FILE)
ds.create_index("vec", "IVF_PQ", num_partitions=8, num_sub_vectors=4)
ds = lance.write_dataset(table(np.arange(ROWS, ROWS + 1000), vectors(1000, 4)), path, mode="append")
ds.optimize.optimize_indices(num_indices_to_merge=0)
ds = lance.dataset(path)
assert len(ds.describe_indices()[0].segments) == 2, ds.describe_indices()
record("segments", ds, auto=True, where="id % 40 = 7")
ds = lance.write_dataset(table(np.arange(ROWS + 1000, ROWS + 1300), vectors(300, 5)), path, mode="append")
ds.delete("id % 5 = 0")
record("segments", ds, auto=True, where="id % 40 = 7")

# Refused by sparklance: an HNSW sub-index, and vectors of float64.
hnsw = lance.write_dataset(table(np.arange(ROWS), vectors(ROWS, 1)), os.path.join(out, "hnsw"))
hnsw.create_index("vec", "IVF_HNSW_SQ", num_partitions=4)
f64 = pa.table({"id": pa.array(np.arange(10), pa.int64()),
                "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors(10, 3).astype(np.float64).reshape(-1)), DIM)})
lance.write_dataset(f64, os.path.join(out, "f64"))

with open(os.path.join(out, "cases.json"), "w") as f:
    json.dump(cases, f)
print(len(cases))
