"""sparklance builds INVERTED (full-text) indices in pylance 14.0.2's format
(docs/format-inverted-index.md): a table indexed by Spark and a copy indexed by pylance must give
pylance's `full_text_query` the same rows and `_score`s, for each tokenizer setting, partition
count and table kind, and before and after DML and compaction; our `text_search` answers from the
Spark-built index too."""
import random

import lance
import pyarrow as pa
import pytest
from lance.file import LanceFileReader
from pyspark.errors import PySparkException

from fts_oracle import OPTION_SETS, QUERIES, assert_same, by_location, compare, corpus, theirs, write


def build(spark, path, **options):
    """CALL create_index on the table at `path` with pylance-named `options`."""
    args = "".join(f", {k} => {v if isinstance(v, (int, bool)) and not isinstance(v, bool) else repr(v) if isinstance(v, str) else str(v).lower()}"
                   for k, v in options.items())
    return spark.sql(f"CALL lance.system.create_index(table => '{by_location(path)[6:]}', column => 'text', "
                     f"index_type => 'INVERTED'{args})").collect()[0]


def twins(tmp_path, docs, rows_per_file=700, **table_options):
    """Two tables of the same rows: `ours` for Spark to index, `theirs` for pylance."""
    paths = tmp_path / "ours", tmp_path / "theirs"
    for p in paths:
        table = pa.table({"id": pa.array(range(len(docs)), pa.int64()), "text": pa.array(docs, pa.string())})
        lance.write_dataset(table, str(p), max_rows_per_file=rows_per_file, **table_options)
    return paths


def same_answers(a, b, queries=QUERIES, k=20):
    """pylance answers every query on the table at `a` as on the one at `b`; returns the rows matched."""
    return sum(assert_same(theirs(a, q, k), theirs(b, q, k), q) for q in queries)


def index_dir(path):
    ds = lance.dataset(str(path))
    [index] = [i for i in ds.describe_indices() if i.name == "text_idx"]
    return index, [path / "_indices" / str(s.uuid) for s in index.segments]


def test_a_spark_built_index_answers_as_pylances(spark, tmp_path):
    ours, theirs_path = twins(tmp_path, corpus(3000, seed=1))
    row = build(spark, ours)
    assert (row.name, row.index_type, row.segments) == ("text_idx", "INVERTED", 1)
    lance.dataset(str(theirs_path)).create_scalar_index("text", "INVERTED")
    assert same_answers(ours, theirs_path) > 100
    # Our reader answers from the Spark-built index too.
    assert compare(spark, ours) > 100
    index, [segment] = index_dir(ours)
    assert index.type_url == "/lance.table.InvertedIndexDetails" and index.num_rows_indexed == 3000
    meta = LanceFileReader(str(segment / "metadata.lance")).read_all().to_table().schema.metadata
    [pylance_segment] = index_dir(theirs_path)[1]
    want = LanceFileReader(str(pylance_segment / "metadata.lance")).read_all().to_table().schema.metadata
    assert {k: v for k, v in meta.items() if k != b"partitions"} == {k: v for k, v in want.items() if k != b"partitions"}
    assert meta[b"partitions"] == b"[0,1]"  # local[2]: one partition a task


def big_corpus(n, seed):
    """`corpus` plus words in more than 128 and more than 4096 documents (several blocks, several level-1 impacts)."""
    rnd = random.Random(seed)
    return [(d or "") + (" lorem" if i % 2 == 0 else "") + (" ipsum ipsum" if rnd.random() < 0.1 else "") if d is not None else None
            for i, d in enumerate(corpus(n, seed))]


# The reader's option sets but positions (not written by sparklance), and two more.
BUILD_OPTION_SETS = [o for o in OPTION_SETS if "with_position" not in o] + [
    {"base_tokenizer": "raw"},
    {"language": "French", "stem": False, "remove_stop_words": False},
]


@pytest.mark.parametrize("options", BUILD_OPTION_SETS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_each_option_set_answers_as_pylances(spark, tmp_path, options):
    ours, theirs_path = twins(tmp_path, corpus(2500, seed=3))
    sql_options = {k: ("none" if v is None else ",".join(v) if isinstance(v, list) else v) for k, v in options.items()}
    build(spark, ours, **sql_options)
    lance.dataset(str(theirs_path)).create_scalar_index("text", "INVERTED", **options)
    queries = QUERIES + ["Hello World", "the a of", "lorem"]
    assert same_answers(ours, theirs_path, queries) > 10
    meta = lambda p: LanceFileReader(str(index_dir(p)[1][0] / "metadata.lance")).read_all().to_table().schema.metadata
    assert meta(ours)[b"params"] == meta(theirs_path)[b"params"]


@pytest.mark.parametrize("workers", [1, 3, 7])
def test_partition_counts_do_not_change_the_answers(spark, tmp_path, workers):
    """Posting lists of more than 4096 documents; a fragment split between partitions."""
    ours, theirs_path = twins(tmp_path, big_corpus(9000, seed=4), rows_per_file=4000)
    build(spark, ours, num_workers=workers)
    lance.dataset(str(theirs_path)).create_scalar_index("text", "INVERTED")
    assert same_answers(ours, theirs_path, QUERIES + ["lorem", "ipsum", "lorem ipsum"], k=50) > 100
    meta = LanceFileReader(str(index_dir(ours)[1][0] / "metadata.lance")).read_all().to_table().schema.metadata
    assert meta[b"partitions"].decode() == "[" + ",".join(str(p) for p in range(workers)) + "]"


def test_stable_row_ids_dml_and_compaction(spark, tmp_path):
    ours, theirs_path = twins(tmp_path, big_corpus(5000, seed=5), rows_per_file=1000, enable_stable_row_ids=True)
    spark.sql(f"CREATE INDEX text_idx ON {by_location(ours)} USING inverted (text) OPTIONS (stem = 'false')")
    lance.dataset(str(theirs_path)).create_scalar_index("text", "INVERTED", stem=False)
    assert same_answers(ours, theirs_path, QUERIES + ["lorem"]) > 100
    for p in (ours, theirs_path):
        ds = lance.dataset(str(p))
        ds.delete("id % 7 = 3")
        ds.update({"text": "'hello hello world quick'"}, where="id >= 100 AND id < 110")
        lance.dataset(str(p)).optimize.compact_files(target_rows_per_fragment=2500)
    assert same_answers(ours, theirs_path, QUERIES + ["lorem"]) > 100
    assert compare(spark, ours) > 100


def test_dml_and_compaction_on_a_plain_table(spark, tmp_path):
    ours, theirs_path = twins(tmp_path, corpus(3000, seed=6))
    build(spark, ours)
    lance.dataset(str(theirs_path)).create_scalar_index("text", "INVERTED")
    spark.sql(f"DELETE FROM {by_location(ours)} WHERE id % 5 = 2")
    spark.sql(f"UPDATE {by_location(ours)} SET text = 'hello world again' WHERE id < 20")
    ds = lance.dataset(str(theirs_path))
    ds.delete("id % 5 = 2")
    ds.update({"text": "'hello world again'"}, where="id < 20")
    assert same_answers(ours, theirs_path) > 100
    for p in (ours, theirs_path):
        lance.dataset(str(p)).optimize.compact_files(target_rows_per_fragment=5000)
    assert same_answers(ours, theirs_path) > 100
    assert compare(spark, ours) > 100


def test_a_column_without_tokens_gets_an_index_that_matches_nothing(spark, tmp_path):
    ours, theirs_path = twins(tmp_path, [None, "", "the a of"] * 50)
    build(spark, ours)
    assert theirs(ours, "hello", 10) == []


def test_refusals_name_the_option(spark, tmp_path):
    ours, _ = twins(tmp_path, corpus(100, seed=7))
    for options, message in [({"base_tokenizer": "ngram"}, "base_tokenizer 'ngram'"),
                             ({"with_position": True}, "with_position = true is not supported"),
                             ({"language": "French"}, "language 'French' is not supported with stem"),
                             ({"lower_case": "'maybe'"}, "lower_case must be true or false"),
                             ({"zone_size": 10}, "zone_size applies to BTREE")]:
        with pytest.raises(Exception, match=message):
            if options == {"lower_case": "'maybe'"}:
                spark.sql(f"CREATE INDEX i ON {by_location(ours)} USING inverted (text) OPTIONS (lower_case = 'maybe')")
            else:
                build(spark, ours, **options)
    numbers = tmp_path / "numbers"
    lance.write_dataset(pa.table({"text": pa.array(range(10), pa.int64())}), str(numbers))
    with pytest.raises(Exception, match="cannot have an INVERTED index"):
        spark.sql(f"CALL lance.system.create_index(table => '{by_location(numbers)[6:]}', column => 'text', index_type => 'FTS')")


@pytest.mark.parametrize("stable", [False, True], ids=["addresses", "stable_row_ids"])
def test_optimize_index_adds_a_segment_over_new_fragments(spark, tmp_path, stable):
    extra = {"enable_stable_row_ids": True} if stable else {}
    ours, theirs_path = twins(tmp_path, corpus(2000, seed=8), **extra)
    build(spark, ours, custom_stop_words="hello,the")
    lance.dataset(str(theirs_path)).create_scalar_index("text", "INVERTED", custom_stop_words=["hello", "the"])
    more = pa.table({"id": pa.array(range(2000, 2900), pa.int64()), "text": pa.array(corpus(900, seed=9), pa.string())})
    for p in (ours, theirs_path):
        lance.write_dataset(more, str(p), mode="append", max_rows_per_file=400)
    spark.sql(f"CALL lance.system.optimize_index(table => '{by_location(ours)[6:]}')").collect()
    lance.dataset(str(theirs_path)).optimize.optimize_indices(num_indices_to_merge=0)
    index, segments = index_dir(ours)
    assert len(segments) == 2 and index.num_rows_indexed == 2900
    # Both indices cover every row now: the answers come from the index alone.
    for p in (ours, theirs_path):
        hits = lance.dataset(str(p)).to_table(full_text_query="running", columns=["id"], fast_search=True)
        assert hits.num_rows > 0
    assert same_answers(ours, theirs_path) > 100
    assert compare(spark, ours) > 100
    # Nothing left to cover: nothing to do.
    spark.sql(f"CALL lance.system.optimize_index(table => '{by_location(ours)[6:]}')").collect()
    assert len(index_dir(ours)[1]) == 2


def test_optimize_index_leaves_an_index_with_positions_unless_named(spark, tmp_path):
    path = tmp_path / "t"
    write(path, corpus(500, seed=10)).create_scalar_index("text", "INVERTED", with_position=True)
    write(path, corpus(200, seed=11), start=500, mode="append")
    table = by_location(path)[6:]
    spark.sql(f"CALL lance.system.optimize_index(table => '{table}')").collect()
    assert len(lance.dataset(str(path)).describe_indices()[0].segments) == 1
    with pytest.raises(PySparkException, match="with_position = true is not written by sparklance"):
        spark.sql(f"CALL lance.system.optimize_index(table => '{table}', name => 'text_idx')").collect()
