"""Issue 33 item 4: an index built on several executor JVMs. A Spark application on
`local-cluster[2,1,1024]` (vector_index_cluster_child.py) builds IVF_PQ with CREATE INDEX on a
table pylance wrote (three fragments of clustered vectors): pylance validates the index and its
`nearest` on it finds what exact search finds (all partitions and a refine: the same rows; at
pylance's defaults near the recall@10 of pylance's own index with the same options), vector_search in that application returned pylance's ids,
and an EXACT NEAREST join there (sparklance's exact search, no cross join) answered as numpy's
exact search."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa

from conftest import table_path

CHILD = Path(__file__).with_name("vector_index_cluster_child.py")
DIM, ROWS, K = 16, 3000, 10


def test_index_built_on_two_executors_is_pylance_s_and_exact_join_agrees(warehouse, tmp_path):
    name = "lance.db.vector_index_cluster"
    path = table_path(warehouse, name)
    rng = np.random.default_rng(23)
    centres = rng.standard_normal((12, DIM)).astype(np.float32) * 4
    data = (centres[rng.integers(0, 12, ROWS)] + rng.standard_normal((ROWS, DIM))).astype(np.float32)
    lance.write_dataset(pa.table({"id": pa.array(np.arange(ROWS), pa.int64()),
                                  "emb": pa.FixedSizeListArray.from_arrays(pa.array(data.ravel()), DIM)}),
                        path, max_rows_per_file=1000)
    # pylance's own index with the same options, on copies: the recall ours must match. pylance
    # trains from a random sample, so its recall here moves from build to build (579 to 600 hits
    # of 720 over 9 builds): ours is held to the median of three.
    theirs = []
    for copy in range(3):
        shutil.copytree(path, tmp_path / f"copy{copy}.lance")
        theirs.append(lance.dataset(str(tmp_path / f"copy{copy}.lance")))
        theirs[-1].create_index("emb", "IVF_PQ", num_partitions=6, num_sub_vectors=8, metric="l2")
    queries = (centres[np.arange(12) % 12] + rng.standard_normal((12, DIM))).astype(np.float32)
    np.save(tmp_path / "queries.npy", queries)
    run = subprocess.run([sys.executable, str(CHILD), str(warehouse), name, str(tmp_path / "queries.npy"), str(K)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    result = json.loads(next(line for line in run.stdout.splitlines() if line.startswith("RESULT "))[len("RESULT "):])
    assert result["executors"] == 2

    ds = lance.dataset(path)
    ds.validate()
    # One segment per task of the build (a group of fragments each), together covering the table.
    [index] = [i for i in ds.describe_indices() if i.name == "emb_idx"]
    assert len(index.segments) == 2 and index.num_rows_indexed == ROWS, index
    assert ds.stats.index_stats("emb_idx")["index_type"] == "IVF_PQ"
    hits, their_hits = 0, [0] * len(theirs)
    for i, q in enumerate(queries):
        exact = ds.to_table(nearest={"column": "emb", "q": q, "k": K, "use_index": False}, columns=["id"])["id"].to_pylist()
        full = ds.to_table(nearest={"column": "emb", "q": q, "k": K, "nprobes": 6, "refine_factor": 20}, columns=["id"])
        assert sorted(full["id"].to_pylist()) == sorted(exact), i
        default = ds.to_table(nearest={"column": "emb", "q": q, "k": K}, columns=["id"])["id"].to_pylist()
        hits += len(set(default) & set(exact))
        for b, index in enumerate(theirs):
            their_hits[b] += len(set(index.to_table(nearest={"column": "emb", "q": q, "k": K}, columns=["id"])["id"].to_pylist())
                                 & set(exact))
        # vector_search at its defaults, in the cluster's application: pylance's answer.
        assert sorted(result["searched"][i]) == sorted(default), i
    # recall@10 at pylance's defaults, over more queries than the application ran: near that of
    # pylance's own index with the same options. Two executors draw another training sample than
    # pylance does (on 72 queries 0.800 vs 0.803; on the 12 alone 0.78 vs 0.83); the like-for-like
    # comparison within 0.02 (issue 33 item 2) is test_vector_interop.py's, in one process.
    for q in (centres[np.arange(60) % 12] + rng.standard_normal((60, DIM))).astype(np.float32):
        exact = set(ds.to_table(nearest={"column": "emb", "q": q, "k": K, "use_index": False}, columns=["id"])["id"].to_pylist())
        hits += len(set(ds.to_table(nearest={"column": "emb", "q": q, "k": K}, columns=["id"])["id"].to_pylist()) & exact)
        for b, index in enumerate(theirs):
            their_hits[b] += len(set(index.to_table(nearest={"column": "emb", "q": q, "k": K}, columns=["id"])["id"].to_pylist()) & exact)
    assert hits >= sorted(their_hits)[1] - 0.03 * K * (len(queries) + 60), (hits, their_hits)

    # The EXACT NEAREST join there: sparklance's exact search (no cross join), each query's K nearest
    # rows as numpy finds them (float64; no equal distances in this data), with Spark's distances.
    rows, searched, crossed = result["exact"]
    assert searched and not crossed
    got = {}
    for qid, i, value in rows:
        got.setdefault(qid, {})[i] = value
    for qid, q in enumerate(queries):
        d = np.sqrt(((data.astype(np.float64) - q.astype(np.float64)) ** 2).sum(axis=1))
        nearest = np.argsort(d)[:K]
        assert sorted(got[qid]) == sorted(nearest.tolist()), qid
        assert all(abs(got[qid][i] - d[i]) <= 1e-4 * max(1.0, d[i]) for i in nearest)
