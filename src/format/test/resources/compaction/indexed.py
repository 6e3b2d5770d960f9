"""pylance's indexed queries on a table sparklance compacted (CompactionIndexSuite).

build <path> <stable>   fragments 0-4 (BTREE on id, built first), 5-9 (BITMAP on cat, IVF_PQ on v and
                        ZONEMAP on x cover 0-9), 10-12 appended unindexed; some rows deleted everywhere
check <path>            one JSON line: per query whether the indexed answer equals a scan's, whether
                        the index was used, and every index's fragment coverage
"""
import json, sys
import lance, numpy as np, pyarrow as pa

def rows(start, n, rng):
    ids = np.arange(start, start + n, dtype=np.int64)
    v = rng.random((n, 8), dtype=np.float32)
    return pa.table({
        "id": ids,
        "cat": pa.array([f"c{k % 7}" for k in ids]),
        "x": pa.array((ids * 37) % 1000, pa.int64()),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)), 8),
    })

def build(path, stable):
    rng = np.random.default_rng(7)
    for i in range(10):
        lance.write_dataset(rows(i * 300, 300, rng), path, mode="append" if i else "create",
                            enable_stable_row_ids=stable)
        if i == 4:
            lance.dataset(path).create_scalar_index("id", "BTREE")
    ds = lance.dataset(path)
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("x", "ZONEMAP")
    ds.create_index("v", "IVF_PQ", num_partitions=2, num_sub_vectors=2)
    for i in range(3):
        lance.write_dataset(rows(3000 + i * 100, 100, rng), path, mode="append")
    ds = lance.dataset(path)
    ds.delete("id % 11 = 3")

def check(path):
    ds = lance.dataset(path)
    out = {"queries": {}, "coverage": {}}
    for f in ["id = 1234", "id >= 1500 and id < 1600", "id = 3150", "cat = 'c3'", "cat = 'c5' and id < 2000", "x > 900"]:
        indexed = sorted(ds.to_table(columns=["id"], filter=f).column("id").to_pylist())
        scanned = sorted(ds.to_table(columns=["id"], filter=f, use_scalar_index=False).column("id").to_pylist())
        plan = ds.scanner(columns=["id"], filter=f).explain_plan()
        out["queries"][f] = {"equal": indexed == scanned, "rows": len(scanned), "index_used": "ScalarIndexQuery" in plan}
    rng = np.random.default_rng(11)
    for k in range(3):
        q = rng.random(8, dtype=np.float32)
        # All partitions and a refine factor above the row count make the indexed search exact.
        ann = {"column": "v", "q": q, "k": 10, "nprobes": 2, "refine_factor": 1000}
        got = ds.to_table(columns=["id", "_distance"], nearest=ann)
        exact = ds.to_table(columns=["id", "_distance"], nearest={"column": "v", "q": q, "k": 10, "use_index": False})
        plan = ds.scanner(columns=["id", "_distance"], nearest=ann).explain_plan()
        out["queries"][f"nearest {k}"] = {"equal": sorted(got.column("id").to_pylist()) == sorted(exact.column("id").to_pylist()),
                                           "rows": exact.num_rows, "index_used": "ANN" in plan}
    for idx in ds.list_indices():
        out["coverage"][idx["name"]] = sorted(idx["fragment_ids"])
    out["fragments"] = [f.fragment_id for f in ds.get_fragments()]
    out["count"] = ds.count_rows()
    print(json.dumps(out, sort_keys=True))

if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2], sys.argv[3] == "true")
    else:
        check(sys.argv[2])
