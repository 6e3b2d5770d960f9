"""The corpus, queries and pylance oracle shared by the full-text tests (test_fts_format.py reads
pylance-built INVERTED indices, test_inverted_index_build.py builds them with Spark): our
`text_search` and pylance's `full_text_query` answer the same queries and are compared."""
import random

import lance
import pyarrow as pa
import pytest

WORDS = ["Running", "runs", "ran", "runner", "the", "a", "of", "and", "Café", "crème", "naïve", "résumé",
         "HELLO", "world", "fox!", "dog,", "lazy", "quick", "brown", "jumps", "x" * 45, "zebra's", "it's",
         "don't", "sphinx", "Über", "straße", "fiancée", "connection", "connected", "connecting",
         "generously", "happiness", "12", "3.14", "foo-bar", "baz_qux", "Ærø", "ça", "œuvre", "Does",
         "was", "HAS", "flies", "ponies", "agreed", "hopping", "relational", "électricité", "Ñandú"]
COMMON = WORDS[:8]

QUERIES = ["running", "RUN", "hello world", "quick brown fox", "cafe", "café crème", "resume", "résumé",
           "the", "does", "it's", "foo bar", "straße strasse", "ubergang uber", "connect", "generous",
           "fly flies", "pony", "agree", "hop", "relate", "electricite", "nandu", "aero", "oeuvre",
           "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "12 3 14", "hello hello", "zebra", "nothing-here"]


def corpus(n, seed):
    rnd = random.Random(seed)
    docs = []
    for i in range(n):
        if i % 37 == 5:
            docs.append(None)
        elif i % 41 == 7:
            docs.append("")
        else:
            docs.append(" ".join(rnd.choice(WORDS) if rnd.random() < 0.7 else rnd.choice(COMMON)
                                 for _ in range(rnd.randint(1, 12))))
    return docs


def write(path, docs, start=0, mode="create", rows_per_file=700):
    table = pa.table({"id": pa.array(range(start, start + len(docs)), pa.int64()), "text": pa.array(docs, pa.string())})
    return lance.write_dataset(table, str(path), mode=mode, max_rows_per_file=rows_per_file)


def by_location(path):
    return f"lance.`{path}`"


def ours(spark, table, query, k, version=None):
    """(id, _score) of text_search's answer on `table` (a name), best first."""
    extra = f", version => {version}" if version is not None else ""
    literal = query.replace("\\", "\\\\").replace("'", "\\'")
    rows = spark.sql(f"SELECT id, _score FROM text_search(table => '{table}', column => 'text', "
                     f"query => '{literal}', k => {k}{extra})").collect()
    return [(r.id, r._score) for r in rows]


def theirs(path, query, k, version=None):
    t = lance.dataset(str(path), version=version).to_table(
        full_text_query={"query": query, "columns": ["text"]}, columns=["id"], limit=k)
    return list(zip(t["id"].to_pylist(), t["_score"].to_pylist()))


def assert_same(got, want, query):
    """Same scores in order (f32 tolerance); the same rows, except which of a tie at the k-th place."""
    assert len(got) == len(want), (query, got, want)
    want = sorted(want, key=lambda h: (-h[1], h[0]))
    for (_, g), (_, w) in zip(got, want):
        assert g == pytest.approx(w, rel=2e-6, abs=1e-6), (query, got, want)
    if want:
        cut = want[-1][1]
        above = lambda hits: {r for r, s in hits if s > cut * (1 + 1e-5)}
        assert above(got) == above(want), (query, got, want)
    return len(want)


def compare(spark, path, table=None, queries=QUERIES, k=20, version=None):
    """Every query's answer on `table` (default: the table at `path`, by location) equals pylance's on `path`."""
    table = table or by_location(path)
    matched = 0
    for q in queries:
        matched += assert_same(ours(spark, table, q, k, version), theirs(path, q, k, version), q)
    return matched


# Tokenizer settings of pylance's create_scalar_index(..., "INVERTED", ...) the tests go through.
OPTION_SETS = [
    {},
    {"stem": False},
    {"remove_stop_words": False},
    {"lower_case": False},
    {"ascii_folding": False},
    {"base_tokenizer": "whitespace"},
    {"max_token_length": 8},
    {"max_token_length": None, "stem": False, "remove_stop_words": False, "ascii_folding": False},
    {"with_position": True},
    {"custom_stop_words": ["run", "hello", "the"]},
]
