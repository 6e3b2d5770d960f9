"""pylance building indices while sparklance compacts (CompactionRaceSuite).

build <path> <stable> [segments]
                          ten fragments of 100 rows, no index; with "segments", a ZONEMAP on x built
                          on the first five and extended to the others as a second segment
index <path> <kinds>      creates scalar indices, e.g. "BTREE,BITMAP,ZONEMAP" (on id, cat and x)
check <path>              one JSON line: whether each indexed query equals a scan, whether an index
                          was used, the row count and each index's fragments
"""
import json, sys, warnings
import lance, numpy as np, pyarrow as pa

COLUMNS = {"BTREE": "id", "BITMAP": "cat", "ZONEMAP": "x"}

def build(path, stable, segments=False):
    for i in range(10):
        ids = np.arange(i * 100, i * 100 + 100, dtype=np.int64)
        t = pa.table({"id": ids, "cat": pa.array([f"c{k % 7}" for k in ids]), "x": pa.array((ids * 37) % 1000, pa.int64())})
        lance.write_dataset(t, path, mode="append" if i else "create", enable_stable_row_ids=stable)
        if segments and i == 4:
            lance.dataset(path).create_scalar_index("x", "ZONEMAP")
    if segments:
        lance.dataset(path).optimize.optimize_indices(num_indices_to_merge=0)

def index(path, kinds):
    ds = lance.dataset(path)
    for kind in kinds.split(","):
        ds.create_scalar_index(COLUMNS[kind], kind)

def check(path):
    ds = lance.dataset(path)
    out = {"queries": {}}
    for f in ["id = 123", "id >= 450 and id < 560", "cat = 'c3'", "x > 900"]:
        indexed = sorted(ds.to_table(columns=["id"], filter=f).column("id").to_pylist())
        scanned = sorted(ds.to_table(columns=["id"], filter=f, use_scalar_index=False).column("id").to_pylist())
        out["queries"][f] = {"equal": indexed == scanned, "rows": len(scanned),
                             "index_used": "ScalarIndexQuery" in ds.scanner(columns=["id"], filter=f).explain_plan()}
    out["count"] = ds.count_rows()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # list_indices is deprecated, but the only one that lists fragments
        out["coverage"] = {i["name"]: sorted(i["fragment_ids"]) for i in ds.list_indices()}
    print(json.dumps(out, sort_keys=True))

if __name__ == "__main__":
    {"build": lambda: build(sys.argv[2], sys.argv[3] == "true", sys.argv[4:] == ["segments"]),
     "index": lambda: index(sys.argv[2], sys.argv[3]),
     "check": lambda: check(sys.argv[2])}[sys.argv[1]]()
