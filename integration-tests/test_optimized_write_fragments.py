"""Optimized writes (the default) cut their shuffle into tasks of at most one fragment's rows: a
run of appends leaves one fragment per `max_rows_per_file` rows of each append and no small tail
fragment after each full one. Spark alone sized the tasks by bytes and kept at least the session's
parallelism, so an append of under a fragment on two cores became two half fragments, and a large
append full fragments plus a tail per task. Fragments are counted by pylance."""
import math

import lance
import pytest

from conftest import table_path

# Rows of about 140 bytes that compress little (hex digests), so that one append's shuffle is
# several MiB: adaptive execution's minimum partition size (1 MiB) does not merge them anyway.
ROWS = ("id AS k", "sha2(CAST(id AS STRING), 256) AS a", "sha2(CAST(id * 7 AS STRING), 256) AS b", "id * 0.5 AS v")


@pytest.fixture
def many_shuffle_partitions(spark):
    """A shuffle of more partitions than the tests' session has (2), as Spark's default (200) gives."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "40")
    yield
    spark.conf.set("spark.sql.shuffle.partitions", before)


def appended(spark, warehouse, name, rows_per_file, appends):
    """Fragment row counts (pylance) after appends of the given row counts, each as spark.range in 2 partitions."""
    spark.sql(f"DROP TABLE IF EXISTS lance.db.{name}")
    spark.sql(f"CREATE TABLE lance.db.{name} (k BIGINT, a STRING, b STRING, v DOUBLE) "
              f"TBLPROPERTIES ('max_rows_per_file' = '{rows_per_file}')")
    start = 0
    for n in appends:
        spark.range(start, start + n, 1, 2).selectExpr(*ROWS).writeTo(f"lance.db.{name}").append()
        start += n
    ds = lance.dataset(table_path(warehouse, f"lance.db.{name}"))
    assert ds.count_rows() == start
    assert sorted(ds.to_table(columns=["k"]).column("k").to_pylist()) == list(range(start))
    return [f.count_rows() for f in ds.get_fragments()]


def test_appends_under_a_fragment_make_one_fragment_each(spark, warehouse, many_shuffle_partitions):
    # Six appends of 48,000 rows with 50,000 rows per file: one fragment each, which is the issue's
    # ceil(rows / max_rows_per_file) here, as each append is nearly a full fragment.
    sizes = appended(spark, warehouse, "ow_under", 50_000, [48_000] * 6)
    assert sizes == [48_000] * 6
    assert len(sizes) == math.ceil(6 * 48_000 / 50_000)


def test_append_of_several_fragments_has_no_tail_per_task(spark, warehouse, many_shuffle_partitions):
    # 3.5 fragments' rows: four fragments, about even (no task writes a full fragment and a tail).
    sizes = appended(spark, warehouse, "ow_over", 40_000, [140_000])
    assert len(sizes) == 4, sizes
    assert max(sizes) <= 40_000 and min(sizes) >= 30_000, sizes


def test_rows_per_file_under_an_append(spark, warehouse, many_shuffle_partitions):
    # Appends of 50,000 rows with 15,000 rows per file: each append needs ceil(50,000 / 15,000) = 4
    # fragments; the table's ceil(150,000 / 15,000) = 10 would need an append to fill the previous
    # one's last fragment, and fragments are immutable: 12.
    sizes = appended(spark, warehouse, "ow_small_files", 15_000, [50_000] * 3)
    assert len(sizes) == 3 * math.ceil(50_000 / 15_000), sizes
    assert max(sizes) <= 15_000 and min(sizes) >= 12_000, sizes


def test_optimize_write_off_keeps_input_partitions(spark, warehouse, many_shuffle_partitions):
    # Without optimized writes each input partition is written as it comes: 2 partitions, 2 fragments.
    spark.sql("DROP TABLE IF EXISTS lance.db.ow_off")
    spark.sql("CREATE TABLE lance.db.ow_off (k BIGINT, a STRING, b STRING, v DOUBLE) "
              "TBLPROPERTIES ('max_rows_per_file' = '50000', 'optimize_write' = 'false')")
    spark.range(0, 48_000, 1, 2).selectExpr(*ROWS).writeTo("lance.db.ow_off").append()
    ds = lance.dataset(table_path(warehouse, "lance.db.ow_off"))
    assert [f.count_rows() for f in ds.get_fragments()] == [24_000, 24_000]
