"""Issue 35: `lance_match(column, 'query')`, the boolean full-text match usable in any WHERE. Its
answers must equal a Python tokenizer oracle of pylance's default INVERTED settings (no index: both
sides tokenized with them; plain DataFrames too) and, on a column pylance indexed, pylance's
`full_text_query` hit set (every row of score > 0), also after DELETE, UPDATE, append and compaction
between the index build and the query, and for an index of other settings. With the index the scan
reads only the rows its posting lists name (and the fragments it does not cover): fewer rows and
splits than the same query with data skipping off, which must give the same rows."""
import unicodedata
from pathlib import Path

import lance
import pyarrow as pa
import pytest
import snowballstemmer

from conftest import scan_metrics, table_path
from test_fts_format import QUERIES, by_location, corpus, write

STOP_WORDS = set((Path(__file__).resolve().parent.parent / "src/format/main/resources/sparklance/format/index/text/"
                  "english-stop-words.txt").read_text("utf-8").split())
STEMMER = snowballstemmer.stemmer("english")
# Letters ASCII folding maps that NFKD does not decompose.
LETTERS = {"ß": "ss", "æ": "ae", "ø": "o", "œ": "oe", "ð": "d", "þ": "th", "ł": "l", "đ": "d"}


def fold(token):
    decomposed = unicodedata.normalize("NFKD", token)
    return "".join(LETTERS.get(c, c) for c in decomposed if not unicodedata.combining(c))


def tokens(text):
    """pylance's default analyzer: runs of alphanumeric characters, tokens of 40 UTF-8 bytes or more
    dropped, lower case, the English Snowball stemmer, stop words (of the stemmed token) removed,
    ASCII folding."""
    runs, current = [], []
    for ch in text + " ":
        if ch.isalnum():
            current.append(ch)
        elif current:
            runs.append("".join(current))
            current = []
    out = []
    for t in runs:
        if len(t.encode("utf-8")) >= 40:
            continue
        t = STEMMER.stemWord(t.lower())
        if t not in STOP_WORDS:
            out.append(fold(t))
    return out


def oracle(rows, query):
    """The ids whose text shares a token with `query` (NULL text matches nothing)."""
    wanted = set(tokens(query))
    return sorted(i for i, text in rows if text is not None and wanted & set(tokens(text)))


def sql_string(s):
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def ours(spark, table, query, options=""):
    """The ids `lance_match` keeps and the rows and splits the Lance scan read."""
    rows, metrics = scan_metrics(spark.sql(f"SELECT id FROM {table} {options} WHERE lance_match(text, {sql_string(query)})"))
    return sorted(r.id for r in rows), {k: metrics[k] for k in ("numOutputRows", "splitsRead")}


def theirs(path, query):
    """pylance's full_text_query hits: every row of score > 0."""
    t = lance.dataset(str(path)).to_table(full_text_query={"query": query, "columns": ["text"]}, columns=["id"],
                                          limit=1_000_000)
    return sorted(t["id"].to_pylist())


def rows_of(path):
    t = lance.dataset(str(path)).to_table(columns=["id", "text"])
    return list(zip(t["id"].to_pylist(), t["text"].to_pylist()))


def test_oracle_sees_what_the_corpus_is_made_of():
    assert tokens("Running runs, RAN!") == ["run", "run", "ran"]
    assert tokens("The Café straße Ærø") == ["cafe", "strasse", "aero"]
    assert tokens("x" * 45 + " of the and") == []


def test_without_an_index_matches_equal_the_oracle_on_tables_and_dataframes(spark, tmp_path):
    path = tmp_path / "t"
    write(path, corpus(2000, seed=35), rows_per_file=500)
    rows = rows_of(path)
    frame = spark.createDataFrame(rows, "id BIGINT, text STRING")
    frame.createOrReplaceTempView("match_frame")
    matched = 0
    for q in QUERIES:
        want = oracle(rows, q)
        assert ours(spark, by_location(path), q)[0] == want, q
        assert ours(spark, "match_frame", q)[0] == want, q
        matched += len(want)
    assert matched > 1000
    # NULL text gives NULL, which WHERE drops and NOT keeps dropped.
    nulls = {i for i, t in rows if t is None}
    assert nulls
    negated = {r.id for r in spark.sql(f"SELECT id FROM {by_location(path)} WHERE NOT lance_match(text, 'running')").collect()}
    assert not negated & nulls and negated | set(oracle(rows, "running")) | nulls == {i for i, _ in rows}


def test_with_an_index_matches_equal_pylances_hits_and_the_oracle_reading_fewer_rows(spark, tmp_path):
    path = tmp_path / "t"
    write(path, corpus(2000, seed=36), rows_per_file=500).create_scalar_index("text", "INVERTED")
    rows = rows_of(path)
    table = by_location(path)
    with_index = {"numOutputRows": 0, "splitsRead": 0}
    without = {"numOutputRows": 0, "splitsRead": 0}
    for q in QUERIES:
        got, read = ours(spark, table, q)
        exact, read_all = ours(spark, table, q, "WITH ('data_skipping' = 'false')")
        assert got == exact == theirs(path, q) == oracle(rows, q), q
        for k in read:
            with_index[k] += read[k]
            without[k] += read_all[k]
    assert with_index["numOutputRows"] < without["numOutputRows"] / 2, (with_index, without)
    assert with_index["splitsRead"] < without["splitsRead"], (with_index, without)
    print(f"rows, splits read over {len(QUERIES)} queries: with the index {with_index}, without {without}")
    # A query only a few rows hold reads those rows alone; EXPLAIN names the index.
    got, read = ours(spark, table, "sphinx zebra")
    assert read["numOutputRows"] == len(got)
    plan = spark.sql(f"EXPLAIN SELECT id FROM {table} WHERE lance_match(text, 'zebra')").collect()[0][0]
    assert "lance_match(text, 'zebra') by INVERTED index text_idx" in plan, plan


def test_after_delete_update_append_and_compaction_matches_equal_pylances_hits(spark, warehouse):
    name = "lance.db.match_changes"
    path = table_path(warehouse, name)
    write(path, corpus(2000, seed=37), rows_per_file=500).create_scalar_index("text", "INVERTED")
    table = name

    def check():
        rows = rows_of(path)
        for q in QUERIES:
            got = ours(spark, table, q)[0]
            assert got == theirs(path, q) == oracle(rows, q), q

    spark.sql(f"DELETE FROM {table} WHERE id % 5 = 0")
    check()
    spark.sql(f"UPDATE {table} SET text = 'a zebra running through the café' WHERE id % 7 = 1")
    check()
    spark.sql(f"INSERT INTO {table} VALUES (5000, 'hello sphinx'), (5001, NULL), (5002, 'the of and')")
    write(path, ["pylance appended zebra", "Über alles"], start=6000, mode="append")
    check()
    spark.sql(f"CALL lance.system.compact(table => 'db.match_changes')")
    check()
    assert {5000} <= set(ours(spark, table, "sphinx")[0])


@pytest.mark.parametrize("options", [{"stem": False, "remove_stop_words": False},
                                     {"ascii_folding": False, "lower_case": False}],
                         ids=["no_stemming_or_stop_words", "no_folding_or_lower_case"])
def test_an_index_of_other_settings_binds_the_match_to_its_settings(spark, tmp_path, options):
    path = tmp_path / "t"
    write(path, corpus(1500, seed=38), rows_per_file=500).create_scalar_index("text", "INVERTED", **options)
    rows = rows_of(path)
    differs = 0
    for q in QUERIES:
        got, _ = ours(spark, by_location(path), q)
        assert got == theirs(path, q), q
        differs += got != oracle(rows, q)
    assert differs > 0


def test_on_a_table_with_stable_row_ids_every_row_is_read_and_matches_equal_pylances(spark, tmp_path):
    """The index holds row ids there, not addresses: the scan does not skip by it, and the answer is the same."""
    path = tmp_path / "t"
    docs = corpus(1000, seed=39)
    lance.write_dataset(pa.table({"id": pa.array(range(1000), pa.int64()), "text": pa.array(docs, pa.string())}),
                        str(path), max_rows_per_file=250, enable_stable_row_ids=True)
    lance.dataset(str(path)).create_scalar_index("text", "INVERTED")
    for q in QUERIES[:10]:
        got, read = ours(spark, by_location(path), q)
        assert got == theirs(path, q), q
        assert read["numOutputRows"] == 1000, (q, read)
