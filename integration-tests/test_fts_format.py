"""Differential test of sparklance's reader of pylance's INVERTED (full-text) index
(sparklance.format.index.text, docs/format-inverted-index.md): pylance 14 builds the index, and
our BM25 answers (the table function `text_search` on the table by location) must give pylance's
`full_text_query` rows and `_score`s, for each tokenizer setting. Rows are told apart by `id`."""
import random

import lance
import pyarrow as pa
import pytest
from pyspark.errors import PySparkException

from fts_oracle import COMMON, OPTION_SETS, QUERIES, WORDS, assert_same, by_location, compare, corpus, ours, theirs, write  # noqa: F401


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_scores_equal_pylances_for_each_option_set(spark, tmp_path, options):
    path = tmp_path / "t"
    write(path, corpus(3000, seed=1)).create_scalar_index("text", "INVERTED", **options)
    assert compare(spark, path) > 100


def test_deleted_rows_leave_the_answer_but_not_the_statistics(spark, tmp_path):
    path = tmp_path / "t"
    ds = write(path, corpus(3000, seed=2))
    ds.create_scalar_index("text", "INVERTED")
    before = ours(spark, by_location(path), "hello world", 50)
    ds.delete("id % 3 = 0")
    ds.delete("id >= 700 AND id < 1400")  # a whole fragment
    compare(spark, path)
    after = ours(spark, by_location(path), "hello world", 3000)
    live = set(lance.dataset(str(path)).to_table(columns=["id"])["id"].to_pylist())
    assert {r for r, _ in after} <= live
    # Scores of the rows kept are unchanged: deletions do not touch the index's statistics.
    kept = dict(after)
    assert all(kept[r] == s for r, s in before if r in kept)


def test_delta_segments_add_their_statistics(spark, tmp_path):
    path = tmp_path / "t"
    write(path, corpus(2000, seed=3)).create_scalar_index("text", "INVERTED")
    write(path, corpus(600, seed=4), start=2000, mode="append")
    lance.dataset(str(path)).optimize.optimize_indices(num_indices_to_merge=0)
    assert len(lance.dataset(str(path)).describe_indices()[0].segments) == 2
    compare(spark, path)


def test_stemmer_and_stop_words_match_lances_on_a_vocabulary(spark, tmp_path):
    """One word a row: a word matches pylance's rows exactly when our analyzer gives Lance's token."""
    words = sorted({w for w in """consign consigned consigning consignment consist consisted consistency consistent
        consistently consisting consists consolation consolations consolatory console consoled consoles
        consolidate consolidated consolidating consoling consolingly consols consonant consort consorted
        consorting conspicuous conspicuously conspiracy conspirator conspirators conspire conspired
        conspiring constable constables constance constancy constant knack knackeries knacks knag knave
        knaves knavish kneaded kneading knee kneel kneeled kneeling kneels knees knell knelt knew knick
        knif knife knight knightly knights knit knits knitted knitting knives knob knobs knock knocked
        knocker knockers knocking knocks knopp knot knots generate generates generated generating general
        generally generic generically generous generously dying lying tying news skies sky innings outing
        cannings proceed exceed succeed hoping hopped fizzed fizzing controlling rolling fitted agreed feed
        happy happiness happily beautiful beautifully sensational traditional reference referenced
        communism communist argued arguing atlas cosmos bias andes early earliest earlier hereto
        ties gently ugly only singly idly bly ably sly flies dies spies flying caresses ponies cats
        ran runs running runner sized size excessively electrical electricity electrician does was has
        having been being did doing yourselves ourselves themselves whom which what whose why""".split()})
    path = tmp_path / "t"
    ds = lance.write_dataset(pa.table({"id": pa.array(range(len(words)), pa.int64()), "text": pa.array(words)}), str(path))
    ds.create_scalar_index("text", "INVERTED")
    compare(spark, path, queries=words, k=10)


def test_fragments_the_index_does_not_cover_are_tokenized_at_query_time(spark, tmp_path):
    """pylance's flat search: uncovered rows score with the index's statistics plus their own."""
    path = tmp_path / "t"
    write(path, corpus(1500, seed=5)).create_scalar_index("text", "INVERTED")
    write(path, ["hello hello world"] * 3 + corpus(900, seed=6), start=1500, mode="append", rows_per_file=400)
    ds = lance.dataset(str(path))
    ds.delete("id % 5 = 1")  # in covered and uncovered fragments
    assert compare(spark, path) > 100
    top = ours(spark, by_location(path), "hello world", 2)
    assert {i for i, _ in top} == {1500, 1502}  # the repeated rows of the appended fragment lead (1501 is deleted)
    # The version before the append is searched as it was.
    compare(spark, path, queries=["hello"], k=10, version=2)


def test_stable_row_ids_through_deletes_updates_and_appends(spark, tmp_path):
    path = tmp_path / "t"
    table = pa.table({"id": pa.array(range(1500), pa.int64()), "text": pa.array(corpus(1500, seed=9), pa.string())})
    ds = lance.write_dataset(table, str(path), max_rows_per_file=500, enable_stable_row_ids=True)
    ds.create_scalar_index("text", "INVERTED")
    compare(spark, path)
    ds = lance.dataset(str(path))
    ds.delete("id % 7 = 3")
    ds.update({"text": "'hello hello world quick'"}, where="id >= 100 AND id < 110")  # rows move to a new fragment
    write(path, corpus(300, seed=10), start=1500, mode="append")
    ds = lance.dataset(str(path))
    assert ds.has_stable_row_ids
    assert compare(spark, path) > 100
    top = {i for i, _ in ours(spark, by_location(path), "hello world quick", 10)}
    assert top & set(range(100, 110))


def test_the_raw_tokenizer_keeps_a_value_as_one_token(spark, tmp_path):
    rnd = random.Random(8)
    values = [rnd.choice(WORDS + ["Hello World", "hello world", "Café Crème", "the"]) for _ in range(600)]
    path = tmp_path / "t"
    ds = lance.write_dataset(pa.table({"id": pa.array(range(len(values)), pa.int64()), "text": pa.array(values)}), str(path))
    ds.create_scalar_index("text", "INVERTED", base_tokenizer="raw")
    assert compare(spark, path, queries=sorted(set(values)) + ["HELLO WORLD", "cafe creme", "hello"], k=10) > 100


def test_an_unknown_tokenizer_is_refused_by_name(spark, tmp_path):
    path = tmp_path / "t"
    write(path, corpus(200, seed=7)).create_scalar_index("text", "INVERTED", base_tokenizer="ngram")
    with pytest.raises(PySparkException, match="base_tokenizer = ngram") as err:
        ours(spark, by_location(path), "hello", 10)
    assert err.value.getCondition() == "LANCE_UNSUPPORTED_FEATURE"


def test_an_index_over_a_list_column_is_refused(spark, tmp_path):
    path = tmp_path / "t"
    ds = lance.write_dataset(pa.table({"id": pa.array(range(100), pa.int64()),
                                       "text": pa.array([["hello world", "fox"], ["dog"]] * 50)}), str(path))
    ds.create_scalar_index("text", "INVERTED")
    with pytest.raises(PySparkException, match="column 'text' of .* is ARRAY<STRING>, not a string column") as err:
        ours(spark, by_location(path), "hello", 10)
    assert err.value.getCondition() == "LANCE_INVALID_ARGUMENT"
