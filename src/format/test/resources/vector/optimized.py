"""Oracle for optimize_index: `make PATH TWIN TYPE METRIC` writes a seeded clustered table of 2,000 x 16
float32 vectors (fragments of 1,000), builds a pylance index `vec_idx` (4 partitions) over it, appends
500 rows (fragment 2) and copies the table to TWIN, where pylance's optimize_indices(num_indices_to_merge=0)
adds its own delta. `check PATH TWIN METRIC` validates PATH (where sparklance added a delta), then
compares pylance's nearest on both tables (nprobes 2, no refine: the index's own distances); prints
one JSON line."""
import json
import shutil
import sys

import lance
import numpy as np

from built import table, vectors  # the same seeded clustered vectors


def main():
    action, path, twin = sys.argv[1:4]
    if action == "make":
        index_type, metric = sys.argv[4], sys.argv[5]
        ds = lance.write_dataset(table(vectors(2000, 1), 0), path, max_rows_per_file=1000)
        extra = {"num_sub_vectors": 4} if index_type == "IVF_PQ" else {}
        ds.create_index("vec", index_type, num_partitions=4, metric=metric, **extra)
        lance.write_dataset(table(vectors(500, 2), 2000), path, mode="append")
        shutil.copytree(path, twin)
        lance.dataset(twin).optimize.optimize_indices(num_indices_to_merge=0)
        return
    metric = sys.argv[4]
    ours, theirs = lance.dataset(path), lance.dataset(twin)
    ours.validate()
    out = {"segments": [sorted(i["fragment_ids"]) for i in ours.list_indices()],
           "unindexed": ours.stats.index_stats("vec_idx")["num_unindexed_rows"]}
    centroids = [np.asarray(i["centroids"]) for i in ours.stats.index_stats("vec_idx")["indices"]]
    out["same_centroids"] = all(np.array_equal(c, centroids[0]) for c in centroids)
    same_ids = same_distances = 0
    for q in vectors(20, 99):
        near = {"column": "vec", "q": q, "k": 10, "metric": metric, "nprobes": 2}
        a = ours.to_table(nearest=near, columns=["id"])
        b = theirs.to_table(nearest=near, columns=["id"])
        same_ids += a["id"].to_pylist() == b["id"].to_pylist()
        same_distances += np.allclose(a["_distance"].to_numpy(), b["_distance"].to_numpy(), rtol=1e-5, atol=1e-6)
    out["same_ids"], out["same_distances"] = same_ids, same_distances
    # pylance extends the index further after our delta.
    lance.write_dataset(table(vectors(300, 3), 2500), path, mode="append")
    ours = lance.dataset(path)
    ours.optimize.optimize_indices(num_indices_to_merge=0)
    ours = lance.dataset(path)
    ours.validate()
    out["pylance_after_ours"] = [sorted(i["fragment_ids"]) for i in ours.list_indices()]
    print(json.dumps(out))


main()
