"""Issue 35: text_search's filter, several columns and the AND operator, against pylance 14's own
answers on the same table version (ids and `_score`, relative 2e-6; ties in row id order).

What pylance does, found by experiment (docs/full-text-search.md):
- `to_table(full_text_query=..., filter=f)` post-filters by default (`prefilter=False`): the k best
  rows are found, then those passing f kept (fewer than k, or none). With `prefilter=True` the k best
  rows passing f are found. Scores of indexed rows are the same either way; under a prefilter the
  flat part (fragments the index does not cover) counts only its rows that pass f in its statistics.
- Several columns (`MultiMatchQuery`, or `columns=[...]`): each column scored by its own index, a
  row's score the best of its columns'.
- `MatchQuery(operator=AND)`: the rows holding every distinct query token, with the OR scores."""
import json

import lance
import pyarrow as pa
import pytest
from lance.query import BooleanQuery, FullTextOperator, MatchQuery, MultiMatchQuery, Occur, PhraseQuery
from pyspark.errors import PySparkException

from conftest import table_path
from test_fts_format import assert_same, corpus

N = 2000
QUERIES = ["hello world", "quick brown fox", "running", "café crème", "zebra", "the lazy dog", "hello hello"]
FILTERS = ["tag = 't1'", "id % 2 = 0", f"id >= {N}", "id < 30"]


def _sql_text(s):
    return s.replace("\\", "\\\\").replace("'", "\\'")


def _table(spark, warehouse, name, stable=False):
    """`name`: id, title and body (each with an INVERTED index), tag; 4 fragments, a third of the rows
    deleted in one, and an appended fragment no index covers (tokenized at query time)."""
    path = table_path(warehouse, name)
    data = pa.table({"id": pa.array(range(N), pa.int64()), "title": pa.array(corpus(N, seed=11), pa.string()),
                     "body": pa.array(corpus(N, seed=12), pa.string()),
                     "tag": pa.array([f"t{i % 7}" for i in range(N)], pa.string())})
    ds = lance.write_dataset(data, path, max_rows_per_file=500, enable_stable_row_ids=stable)
    ds.create_scalar_index("title", "INVERTED")
    ds.create_scalar_index("body", "INVERTED")
    ds.delete("id >= 500 AND id < 1000 AND id % 3 = 0")
    more = pa.table({"id": pa.array(range(N, N + 300), pa.int64()), "title": pa.array(corpus(300, seed=13), pa.string()),
                     "body": pa.array(corpus(300, seed=14), pa.string()),
                     "tag": pa.array([f"t{i % 7}" for i in range(N, N + 300)], pa.string())})
    lance.write_dataset(more, path, mode="append")
    return path


@pytest.fixture(scope="module")
def table(spark, warehouse):
    name = "lance.db.tsq"
    return name, _table(spark, warehouse, name)


def ours(spark, name, query, k, columns="title", **args):
    extra = "".join(f", {key} => {value}" for key, value in args.items())
    rows = spark.sql(f"SELECT id, _score FROM text_search(table => '{name}', column => '{columns}', "
                     f"query => '{_sql_text(query)}', k => {k}{extra})").collect()
    return [(r.id, r._score) for r in rows]


def theirs(path, query, k, columns=("title",), operator=FullTextOperator.OR, **scan):
    q = MatchQuery(query, columns[0], operator=operator) if len(columns) == 1 else \
        MultiMatchQuery(query, list(columns), operator=operator)
    t = lance.dataset(path).to_table(full_text_query=q, columns=["id", "_score"], limit=k, **scan)
    return list(zip(t["id"].to_pylist(), t["_score"].to_pylist()))


def in_order(hits):
    """pylance's hits in sparklance's order: score, then row id (ids ascend with row addresses here)."""
    return sorted(hits, key=lambda h: (-h[1], h[0]))


def test_prefilter_equals_pylances(spark, table):
    name, path = table
    matched = 0
    for q in QUERIES:
        for f in FILTERS:
            for k in (5, 20):
                got = ours(spark, name, q, k, filter=f'"{f}"', prefilter="true")
                want = theirs(path, q, k, filter=f, prefilter=True)
                matched += assert_same(got, want, (q, f, k))
    assert matched > 300
    # Scores under a prefilter: the indexed rows' are the unfiltered ones; rows of the flat part score
    # with the statistics of the flat rows that pass (here every other one), so theirs differ.
    every = dict(ours(spark, name, "hello world", 3000))
    filtered = dict(ours(spark, name, "hello world", 3000, filter="'id % 2 = 0'", prefilter="true"))
    assert all(filtered[i] == every[i] for i in filtered if i < N)
    assert any(abs(filtered[i] - every[i]) > 1e-4 for i in filtered if i >= N)


def test_postfilter_is_the_default_and_keeps_the_k_best_that_pass(spark, table):
    name, path = table
    ds = lance.dataset(path)
    direct = 0
    for q in QUERIES:
        everything = in_order(theirs(path, q, 3000))
        for f in FILTERS:
            passing = set(ds.to_table(columns=["id"], filter=f)["id"].to_pylist())
            for k in (5, 20):
                got = ours(spark, name, q, k, filter=f'"{f}"')
                assert got == ours(spark, name, q, k, filter=f'"{f}"', prefilter="false")
                # The k best (ties in row id order), then those passing: fewer than k rows, or none.
                want = [h for h in everything[:k] if h[0] in passing]
                assert [i for i, _ in got] == [i for i, _ in want], (q, f, k, got, want)
                assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=2e-6)
                # pylance's own postfilter answer, where no tie at the k-th place leaves its rows open.
                if len(everything) <= k or everything[k - 1][1] != everything[k][1]:
                    direct += 1
                    assert_same(got, theirs(path, q, k, filter=f), (q, f, k))
    assert direct >= 20


@pytest.mark.parametrize("operator", [FullTextOperator.OR, FullTextOperator.AND], ids=["or", "and"])
def test_several_columns_score_their_best_column_as_pylances_multi_match(spark, table, operator):
    name, path = table
    matched = 0
    for q in QUERIES:
        for k in (10, 40):
            got = ours(spark, name, q, k, columns="title, body", operator=f"'{operator.value.lower()}'")
            matched += assert_same(got, theirs(path, q, k, ("title", "body"), operator), (q, k))
        # With a prefilter, each column's search finds the k best rows passing it.
        got = ours(spark, name, q, 10, columns="title,body", filter="'tag = \\'t3\\''", prefilter="true",
                   operator=f"'{operator.value}'")
        assert_same(got, theirs(path, q, 10, ("title", "body"), operator, filter="tag = 't3'", prefilter=True), q)
    assert matched > 100
    # pylance's columns= form is the same query.
    t = lance.dataset(path).to_table(full_text_query={"query": "hello world", "columns": ["title", "body"]},
                                     columns=["id", "_score"], limit=40)
    assert_same(ours(spark, name, "hello world", 40, columns="title,body"),
                list(zip(t["id"].to_pylist(), t["_score"].to_pylist())), "columns=")


def test_and_operator_equals_pylances(spark, table):
    name, path = table
    matched = 0
    for q in QUERIES + ["nothinghere hello", "the hello"]:
        got = ours(spark, name, q, 50, operator="'AND'")
        want = theirs(path, q, 50, operator=FullTextOperator.AND)
        matched += assert_same(got, want, q)
        ors = dict(ours(spark, name, q, 3000))
        assert all(ors[i] == s for i, s in got), q  # the same scores as OR, on fewer rows
    assert matched > 50
    assert ours(spark, name, "nothinghere hello", 10, operator="'and'") == []


def test_stable_row_ids_prefilter_and_postfilter(spark, warehouse):
    name = "lance.db.tsq_stable"
    path = _table(spark, warehouse, name, stable=True)
    spark.sql(f"UPDATE {name} SET title = 'hello zebra world' WHERE id = 7")  # moved to a new fragment
    for q in ("hello world", "zebra"):
        for f in ("id % 2 = 1", f"id >= {N} OR id = 7"):
            assert_same(ours(spark, name, q, 20, columns="title,body", filter=f'"{f}"', prefilter="true"),
                        theirs(path, q, 20, ("title", "body"), filter=f, prefilter=True), (q, f))
    assert 7 in [i for i, _ in ours(spark, name, "zebra", 5, filter="'id = 7'", prefilter="true")]


@pytest.mark.parametrize("arguments,condition,says", [
    ("column => 'title', query => 'x', filter => 'nope = 1'", "LANCE_INVALID_ARGUMENT",
     "argument 'filter' (nope = 1) is not a condition on the rows of lance.db.tsq"),
    ("column => 'title', query => 'x', filter => 'id +'", "LANCE_INVALID_ARGUMENT", "argument 'filter' (id +)"),
    ("column => 'title', query => 'x', filter => 'id + 1'", "LANCE_INVALID_ARGUMENT", "argument 'filter' (id + 1)"),
    ("column => 'title', query => 'x', filter => 'id > 1', prefilter => 'maybe'", "LANCE_INVALID_ARGUMENT",
     "argument 'prefilter' must be true or false, got maybe"),
    ("column => 'title', query => 'x', operator => 'XOR'", "LANCE_INVALID_ARGUMENT",
     "argument 'operator' must be one of OR, AND, got 'XOR'"),
    ("column => 'title,,body', query => 'x'", "LANCE_INVALID_ARGUMENT",
     "argument 'column' must name one column or several separated by commas, got 'title,,body'"),
    ("column => 'title,TITLE', query => 'x'", "LANCE_INVALID_ARGUMENT", "argument 'column' names column 'title' twice"),
    ("column => 'title,tag', query => 'x'", "LANCE_INDEX_NOT_FOUND", "Column 'tag' of"),
], ids=["unknown_column", "syntax", "not_boolean", "bad_prefilter", "bad_operator", "empty_column", "column_twice",
        "no_index"])
def test_bad_arguments_fail_with_typed_errors(spark, table, arguments, condition, says):
    name, _ = table
    with pytest.raises(PySparkException) as err:
        spark.sql(f"SELECT * FROM text_search(table => '{name}', {arguments})").collect()
    assert err.value.getCondition() == condition and says in str(err.value), str(err.value)


PHRASES = ["hello world", "quick brown", "brown fox", "the hello world", "hello the world", "running runs",
           "café crème", "world", "hello world hello", "zebra's it's", "lazy quick connected"]


def quoted(path, phrase, k, **scan):
    """pylance's answer to the query string '"phrase"' on column title."""
    t = lance.dataset(path).to_table(full_text_query={"query": f'"{phrase}"', "columns": ["title"]},
                                     columns=["id", "_score"], limit=k, **scan)
    return list(zip(t["id"].to_pylist(), t["_score"].to_pylist()))


def test_phrases_in_double_quotes_equal_pylances_phrase_query(spark, warehouse):
    """A query in double quotes is a phrase, as pylance reads a query string: an index with positions
    (several posting blocks of positions), deletions, an append the index does not cover, a prefilter."""
    name = "lance.db.tsq_phrase"
    path = table_path(warehouse, name)
    extra = ["hello world", "world hello", "hello the world", "hello big world", "hello hello world world",
             "HELLO, World!", "the quick brown fox", "brown quick fox"]
    docs = corpus(3000, seed=31) + extra * 20
    ds = lance.write_dataset(pa.table({"id": pa.array(range(len(docs)), pa.int64()), "title": pa.array(docs, pa.string())}),
                             path, max_rows_per_file=1000)
    ds.create_scalar_index("title", "INVERTED", with_position=True)
    lance.dataset(path).delete("id % 5 = 0")
    more = corpus(200, seed=32) + extra
    lance.write_dataset(pa.table({"id": pa.array(range(10000, 10000 + len(more)), pa.int64()),
                                  "title": pa.array(more, pa.string())}), path, mode="append")
    matched = 0
    for phrase in PHRASES:
        t = lance.dataset(path).to_table(full_text_query=PhraseQuery(phrase, "title"), columns=["id", "_score"], limit=3000)
        want = list(zip(t["id"].to_pylist(), t["_score"].to_pylist()))
        got = ours(spark, name, f'"{phrase}"', 3000)
        matched += assert_same(got, want, phrase)
        # pylance's own reading of a quoted string is the same query.
        assert_same(ours(spark, name, f'"{phrase}"', 20), quoted(path, phrase, 20), phrase)
        assert_same(ours(spark, name, f'"{phrase}"', 10, filter="'id % 2 = 1'", prefilter="true"),
                    quoted(path, phrase, 10, filter="id % 2 = 1", prefilter=True), phrase)
    assert matched > 500
    # With slop, the tokens may stand further apart (the indexed rows and the flat ones).
    sloppy = 0
    for phrase in PHRASES:
        if phrase in ("running runs", "hello world hello", "zebra's it's"):
            continue  # a repeated token: refused with a slop (test_phrase_errors)
        for slop in (1, 2, 5):
            t = lance.dataset(path).to_table(full_text_query=PhraseQuery(phrase, "title", slop=slop),
                                             columns=["id", "_score"], limit=4000)
            want = list(zip(t["id"].to_pylist(), t["_score"].to_pylist()))
            sloppy += assert_same(ours(spark, name, f'"{phrase}"', 4000, slop=slop), want, (phrase, slop))
            query = json.dumps({"phrase": {"column": "title", "terms": phrase, "slop": slop}})
            assert_same(ours(spark, name, query, 4000), want, (phrase, slop))
    assert sloppy > matched
    assert 10203 in {i for i, _ in ours(spark, name, '"hello world"', 3000, slop=1)}  # "hello big world"
    # A phrase in Lance's JSON form, inside a boolean query.
    query = {"boolean": {"must": [{"phrase": {"column": "title", "terms": "quick brown"}}],
                         "should": [_match("title", "fox")], "must_not": [_match("title", "lazy")]}}
    t = lance.dataset(path).to_table(columns=["id", "_score"], limit=3000, full_text_query=BooleanQuery(
        [(Occur.MUST, PhraseQuery("quick brown", "title")), (Occur.SHOULD, MatchQuery("fox", "title")),
         (Occur.MUST_NOT, MatchQuery("lazy", "title"))]))
    assert assert_same(ours(spark, name, json.dumps(query), 3000), list(zip(t["id"].to_pylist(), t["_score"].to_pylist())),
                       query) >= 15
    assert {i for i, _ in ours(spark, name, '"hello world"', 3000)} > {10200, 10205}
    assert 10201 not in {i for i, _ in ours(spark, name, '"hello world"', 3000)}  # "world hello"


def test_phrase_errors(spark, table):
    name, _ = table
    for arguments, says in [("column => 'title', query => '\"hello world\"'", "was built without positions"),
                            ("column => 'title', query => 'hello world', slop => 1", "argument 'slop' applies to a phrase"),
                            ("column => 'title', query => '\"hello world\"', slop => -1", "argument 'slop' must be a whole number"),
                            ("column => 'title', query => '\"hello big hello\"', slop => 1", "a phrase that repeats a token ('hello') with a slop is not supported"),
                            ("column => 'title,body', query => '\"hello world\"'", "a phrase query (a query in double quotes) searches one column")]:
        with pytest.raises(PySparkException) as err:
            spark.sql(f"SELECT * FROM text_search(table => '{name}', {arguments})").collect()
        assert err.value.getCondition() == "LANCE_INVALID_ARGUMENT" and says in str(err.value), str(err.value)


def _match(column, terms, **more):
    return {"match": {"column": column, "terms": terms, "fuzziness": 0, **more}}


def test_lance_json_queries_equal_pylances_query_objects(spark, table):
    """A query that is a JSON object is Lance's JSON form of a full-text query (its parser's): match
    (operator, boost), multi_match, boolean (must / should / must_not, nested), against pylance's
    MatchQuery / MultiMatchQuery / BooleanQuery on the same table (two indexed columns, a flat part)."""
    name, path = table
    M = lambda terms, column="title", **kw: MatchQuery(terms, column, **kw)
    cases = [
        (_match("title", "hello world", operator="AND", boost=2.0),
         M("hello world", operator=FullTextOperator.AND, boost=2.0)),
        ({"multi_match": {"match_queries": [{**_match("title", "quick brown")["match"], "boost": 3.0},
                                            _match("body", "quick brown")["match"]]}},
         MultiMatchQuery("quick brown", ["title", "body"], boosts=[3.0, 1.0])),
        ({"boolean": {"must": [_match("title", "hello")], "should": [_match("body", "quick brown")]}},
         BooleanQuery([(Occur.MUST, M("hello")), (Occur.SHOULD, M("quick brown", "body"))])),
        ({"boolean": {"must": [_match("title", "hello"), _match("body", "world")], "must_not": [_match("title", "zebra")]}},
         BooleanQuery([(Occur.MUST, M("hello")), (Occur.MUST, M("world", "body")), (Occur.MUST_NOT, M("zebra"))])),
        ({"boolean": {"should": [_match("title", "running"), _match("body", "café")], "must_not": [_match("body", "the lazy dog")]}},
         BooleanQuery([(Occur.SHOULD, M("running")), (Occur.SHOULD, M("café", "body")), (Occur.MUST_NOT, M("the lazy dog", "body"))])),
        ({"boolean": {"must": [{"boolean": {"should": [_match("title", "fox"), _match("body", "fox")]}}],
                      "should": [_match("title", "hello", boost=0.5)]}},
         BooleanQuery([(Occur.MUST, BooleanQuery([(Occur.SHOULD, M("fox")), (Occur.SHOULD, M("fox", "body"))])),
                       (Occur.SHOULD, M("hello", boost=0.5))])),
    ]
    matched = 0
    for query, theirs_query in cases:
        text = json.dumps(query)
        for k in (10, 200):
            rows = spark.sql(f"SELECT id, _score FROM text_search(table => '{name}', query => '{_sql_text(text)}', k => {k})").collect()
            t = lance.dataset(path).to_table(full_text_query=theirs_query, columns=["id", "_score"], limit=k)
            matched += assert_same([(r.id, r._score) for r in rows], list(zip(t["id"].to_pylist(), t["_score"].to_pylist())), text)
        # With a prefilter, every clause searches the rows passing it.
        got = ours(spark, name, text, 20, filter="'id % 3 = 1'", prefilter="true")
        t = lance.dataset(path).to_table(full_text_query=theirs_query, columns=["id", "_score"], limit=20,
                                         filter="id % 3 = 1", prefilter=True)
        assert_same(got, list(zip(t["id"].to_pylist(), t["_score"].to_pylist())), text)
    assert matched > 300
    # A clause without a column takes the `column` argument.
    assert ours(spark, name, json.dumps({"match": {"terms": "hello world", "fuzziness": 0}}), 30) == \
        ours(spark, name, "hello world", 30)


@pytest.mark.parametrize("query,says", [
    ('{"match": {"column": "title", "terms": "hello"}}', "fuzziness absent (automatic, as Lance reads it) is not supported"),
    ('{"phrase": {"column": "title", "terms": "hello world", "slop": -1}}', "slop -1 is not a whole number of 0 or more"),
    ('{"boost": {}}', "type 'boost' is not supported"),
    ('{"match": {"column": "title", "terms": "x", "fuzziness": 0, "colour": 1}}', "unknown key 'colour'"),
    ('{"match": ', "is not valid JSON"),
    ('{"boolean": {"must_not": [{"match": {"column": "title", "terms": "x", "fuzziness": 0}}]}}', "needs a must or should clause"),
], ids=["fuzzy", "slop", "boost", "unknown_key", "bad_json", "only_must_not"])
def test_bad_json_queries_are_named(spark, table, query, says):
    name, _ = table
    with pytest.raises(PySparkException) as err:
        spark.sql(f"SELECT * FROM text_search(table => '{name}', query => '{_sql_text(query)}')").collect()
    assert err.value.getCondition() == "LANCE_INVALID_ARGUMENT" and "argument 'query'" in str(err.value) \
        and says in str(err.value), str(err.value)


def test_an_older_version_is_searched_and_filtered_as_it_was(spark, warehouse):
    """version => n: the index, the rows and the filter's columns are those of version n."""
    name = "lance.db.tsq_tt"
    path = _table(spark, warehouse, name)
    old = lance.dataset(path).version
    spark.sql(f"UPDATE {name} SET tag = 'gone' WHERE id % 2 = 0")
    spark.sql(f"DELETE FROM {name} WHERE id % 5 = 1")
    query = json.dumps({"boolean": {"must": [_match("title", "hello")], "should": [_match("body", "world")]}})
    ds = lance.dataset(path, version=old)
    for text, theirs_query in (("hello world", MatchQuery("hello world", "title")),
                               (query, BooleanQuery([(Occur.MUST, MatchQuery("hello", "title")),
                                                     (Occur.SHOULD, MatchQuery("world", "body"))]))):
        for prefilter in ("true", "false"):
            got = ours(spark, name, text, 20, filter="\"tag <> 'gone'\"", prefilter=prefilter, version=old)
            t = ds.to_table(full_text_query=theirs_query, columns=["id", "_score"], limit=3000)
            passing = set(ds.to_table(columns=["id"], filter="tag <> 'gone'")["id"].to_pylist())
            ranked = in_order(zip(t["id"].to_pylist(), t["_score"].to_pylist()))
            if prefilter == "true":
                t = ds.to_table(full_text_query=theirs_query, columns=["id", "_score"], limit=20,
                                filter="tag <> 'gone'", prefilter=True)
                assert_same(got, list(zip(t["id"].to_pylist(), t["_score"].to_pylist())), (text, prefilter))
            else:
                want = [h for h in ranked[:20] if h[0] in passing]
                assert [i for i, _ in got] == [i for i, _ in want], (text, prefilter)
                assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=2e-6)
            assert any(i % 2 == 0 for i, _ in got)  # 'gone' only later
        # The latest version: those rows fail the filter now.
        assert all(i % 2 == 1 for i, _ in ours(spark, name, text, 20, filter="\"tag <> 'gone'\"", prefilter="true"))
