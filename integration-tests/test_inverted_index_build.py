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
from lance.query import PhraseQuery
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


# Phrases over the corpus: its common words (stop words among them, leaving gaps), with slops.
PHRASES = [("ran runner", 0), ("runner ran", 0), ("runner the ran", 0), ("ran of a runner", 0), ("the runner", 0),
           ("hello world", 0), ("quick brown fox", 0), ("running lazy", 0), ("ran runner", 1), ("runner ran", 2),
           ("hello lazy", 3), ("quick fox", 1), ("brown runner ran", 2), ("cafe creme", 0), ("resume runner", 5)]


def phrase_corpus(n, seed):
    """`corpus` plus rows of a few common words, so that phrases of them are found often."""
    rnd = random.Random(seed)
    words = ["ran", "runner", "the", "of", "a", "hello", "world", "lazy", "quick", "brown", "fox", "running"]
    return [d if i % 3 else " ".join(rnd.choice(words) for _ in range(rnd.randint(2, 20)))
            for i, d in enumerate(corpus(n, seed))]


def pylance_phrase(path, text, slop, k=50, fast_search=False):
    """(id, _score) of pylance's PhraseQuery; at slop 0 also checks the quoted query string gives the same."""
    ds = lance.dataset(str(path))
    t = ds.to_table(full_text_query=PhraseQuery(text, "text", slop=slop), columns=["id"], limit=k, fast_search=fast_search)
    hits = list(zip(t["id"].to_pylist(), t["_score"].to_pylist()))
    if slop == 0:
        quoted = ds.to_table(full_text_query=f'"{text}"', columns=["id"], limit=k, fast_search=fast_search)
        assert_same(list(zip(quoted["id"].to_pylist(), quoted["_score"].to_pylist())), hits, text)
    return hits


def spark_phrase(spark, path, text, slop, k=50):
    rows = spark.sql(f"SELECT id, _score FROM text_search(table => '{by_location(path)}', column => 'text', "
                     f"query => '\"{text}\"', slop => {slop}, k => {k})").collect()
    return [(r.id, r._score) for r in rows]


def same_phrases(spark, a, b, fast_search=False):
    """pylance answers every phrase on `a` as on `b` (pylance-built), and so does our text_search on `a`; the rows matched."""
    matched = 0
    for text, slop in PHRASES:
        want = pylance_phrase(b, text, slop, fast_search=fast_search)
        matched += assert_same(pylance_phrase(a, text, slop, fast_search=fast_search), want, (text, slop))
        if not fast_search:
            assert_same(spark_phrase(spark, a, text, slop), want, (text, slop))
    return matched


def invert_rows(segment, partition=0):
    """The rows of a partition's invert file, block scores cut off (f32 rounding may differ), as a sorted list."""
    t = LanceFileReader(str(segment / f"part_{partition}_invert.lance")).read_all().to_table()
    rows = [(tuple(b[4:] for b in r["_posting"]), r["_length"], r["_compressed_position"], tuple(r["_position_block_offset"]))
            for r in t.to_pylist()]
    return sorted(rows), t.schema


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
                             ({"with_position": "'maybe'"}, "with_position must be true or false"),
                             ({"language": "French"}, "language 'French' is not supported with stem"),
                             ({"lower_case": "'maybe'"}, "lower_case must be true or false"),
                             ({"zone_size": 10}, "zone_size applies to BTREE")]:
        with pytest.raises(Exception, match=message):
            if options in ({"lower_case": "'maybe'"}, {"with_position": "'maybe'"}):
                [(option, value)] = options.items()
                spark.sql(f"CREATE INDEX i ON {by_location(ours)} USING inverted (text) OPTIONS ({option} = {value})")
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
    spark.sql(f"CALL lance.system.optimize_index(table => '{by_location(ours)[6:]}', num_indices_to_merge => 0)").collect()
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


def test_optimize_index_adds_a_segment_with_positions_to_an_index_with_positions(spark, tmp_path):
    """A pylance-built index with positions gets a Spark-built delta with positions, as pylance's own delta."""
    ours, theirs_path = twins(tmp_path, phrase_corpus(1500, seed=10))
    for p in (ours, theirs_path):
        lance.dataset(str(p)).create_scalar_index("text", "INVERTED", with_position=True)
        write(p, phrase_corpus(600, seed=11), start=1500, mode="append")
    spark.sql(f"CALL lance.system.optimize_index(table => '{by_location(ours)[6:]}', name => 'text_idx', "
              "num_indices_to_merge => 0)").collect()
    lance.dataset(str(theirs_path)).optimize.optimize_indices(num_indices_to_merge=0)
    assert len(index_dir(ours)[1]) == 2
    assert same_phrases(spark, ours, theirs_path, fast_search=True) > 50
    assert same_phrases(spark, ours, theirs_path) > 50  # our text_search too, over both segments


def test_positions_answer_phrase_queries_as_pylances(spark, tmp_path):
    """with_position = true: the same bytes as pylance's in one partition, the same phrase answers in several."""
    ours, theirs_path = twins(tmp_path, phrase_corpus(3000, seed=12))
    spark.sql(f"CREATE INDEX text_idx ON {by_location(ours)} USING inverted (text) OPTIONS (with_position = true, num_workers = 1)")
    lance.dataset(str(theirs_path)).create_scalar_index("text", "INVERTED", with_position=True)
    (_, [segment]), (_, [pylance_segment]) = index_dir(ours), index_dir(theirs_path)
    mine, schema = invert_rows(segment)
    want, want_schema = invert_rows(pylance_segment)
    assert schema == want_schema and schema.metadata == want_schema.metadata and mine == want
    assert any(len(offsets) > 2 for *_, offsets in mine)  # positions of several posting blocks
    meta = lambda s: LanceFileReader(str(s / "metadata.lance")).read_all().to_table().schema.metadata
    assert meta(segment) == meta(pylance_segment)
    assert lance.dataset(str(ours)).describe_indices()[0].details == lance.dataset(str(theirs_path)).describe_indices()[0].details
    assert same_phrases(spark, ours, theirs_path) > 200
    assert same_answers(ours, theirs_path) > 100
    # Several partitions, through the procedure.
    build(spark, ours, with_position=True, num_workers=3)
    assert len(index_dir(ours)[1]) == 1 and meta(index_dir(ours)[1][0])[b"partitions"] == b"[0,1,2]"
    assert same_phrases(spark, ours, theirs_path) > 200


@pytest.mark.parametrize("stable", [False, True], ids=["addresses", "stable_row_ids"])
def test_positions_after_dml_and_compaction(spark, tmp_path, stable):
    extra = {"enable_stable_row_ids": True} if stable else {}
    ours, theirs_path = twins(tmp_path, phrase_corpus(2500, seed=13), rows_per_file=500, **extra)
    build(spark, ours, with_position=True, num_workers=2)
    lance.dataset(str(theirs_path)).create_scalar_index("text", "INVERTED", with_position=True)
    for p in (ours, theirs_path):
        ds = lance.dataset(str(p))
        ds.delete("id % 4 = 1")
        ds.update({"text": "'ran runner the ran hello world'"}, where="id >= 100 AND id < 120")
    assert same_phrases(spark, ours, theirs_path) > 100
    for p in (ours, theirs_path):
        lance.dataset(str(p)).optimize.compact_files(target_rows_per_fragment=2000)
    assert same_phrases(spark, ours, theirs_path) > 100


def segment_fragments(path):
    return sorted(sorted(s.fragment_ids) for s in index_dir(path)[0].segments)


@pytest.mark.parametrize("stable", [False, True], ids=["addresses", "stable_row_ids"])
def test_optimize_index_merges_the_newest_segments_as_pylance(spark, tmp_path, stable):
    """num_indices_to_merge n > 0: one segment replaces the newest n and covers the new fragments
    too; deleted rows keep counting, as in pylance's merge; positions are kept."""
    extra = {"enable_stable_row_ids": True} if stable else {}
    ours, theirs_path = twins(tmp_path, phrase_corpus(1200, seed=14), rows_per_file=600, **extra)
    build(spark, ours, with_position=True)
    lance.dataset(str(theirs_path)).create_scalar_index("text", "INVERTED", with_position=True)

    def optimize(merge):
        spark.sql(f"CALL lance.system.optimize_index(table => '{by_location(ours)[6:]}', num_indices_to_merge => {merge})").collect()
        lance.dataset(str(theirs_path)).optimize.optimize_indices(num_indices_to_merge=merge)

    for k in range(2):
        for p in (ours, theirs_path):
            write(p, phrase_corpus(300, seed=15 + k), start=1200 + 300 * k, mode="append")
        optimize(0)
    for p in (ours, theirs_path):
        lance.dataset(str(p)).delete("id % 5 = 1")
        write(p, phrase_corpus(200, seed=17), start=1800, mode="append")
    assert segment_fragments(ours) == segment_fragments(theirs_path) == [[0, 1], [2], [3]]
    optimize(2)  # the newest two and the new fragment; with stable row ids also the first (its fragments have deletions)
    assert segment_fragments(ours) == segment_fragments(theirs_path) == ([[0, 1, 2, 3, 4]] if stable else [[0, 1], [2, 3, 4]])
    assert same_answers(ours, theirs_path, QUERIES + ["ran runner"], k=50) > 100
    assert same_phrases(spark, ours, theirs_path) > 100
    assert compare(spark, ours) > 100
    optimize(2)  # no new fragment: the two left merged
    assert segment_fragments(ours) == segment_fragments(theirs_path) == [[0, 1, 2, 3, 4]]
    [segment] = index_dir(ours)[1]
    parts = sorted(int(f.name.split("_")[1]) for f in segment.glob("part_*_docs.lance"))
    assert LanceFileReader(str(segment / "metadata.lance")).read_all().to_table().schema.metadata[b"partitions"].decode() == \
        "[" + ",".join(map(str, parts)) + "]" and parts == list(range(len(parts))) and (stable or len(parts) > 2)
    assert same_answers(ours, theirs_path, QUERIES + ["ran runner"], k=50) > 100
    assert same_phrases(spark, ours, theirs_path) > 100
    optimize(1)  # one segment and nothing new: nothing to do
    assert len(index_dir(ours)[1]) == 1
    # Without num_indices_to_merge new fragments join the newest segment, as pylance's default does.
    for p in (ours, theirs_path):
        write(p, phrase_corpus(100, seed=18), start=2000, mode="append")
    spark.sql(f"CALL lance.system.optimize_index(table => '{by_location(ours)[6:]}')").collect()
    lance.dataset(str(theirs_path)).optimize.optimize_indices()
    assert segment_fragments(ours) == segment_fragments(theirs_path) == [[0, 1, 2, 3, 4, 5]]
    assert same_phrases(spark, ours, theirs_path) > 100
