"""Vector columns from Spark's DDL (issue 33 item 1): a list column of equal-length arrays made a
vector by ALTER TABLE ... SET TBLPROPERTIES, writes of arrays of another length refused naming
the row, and data tagged as vectors of another dimension refused. Each result read by pylance 14.0.2."""
import lance
import pyarrow as pa

from conftest import table_path
from test_not_null_and_show_create import _fails


def test_list_column_becomes_a_vector(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    # A pylance table: a list column, nulls inside arrays, a NULL array, two fragments.
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                     "emb": pa.array([[1.0, 2.0, 3.0], [4.0, None, 6.0], None], pa.list_(pa.float32()))})
    lance.write_dataset(rows, path, enable_stable_row_ids=True)
    lance.write_dataset(pa.table({"id": pa.array([4, 5], pa.int64()),
                                  "emb": pa.array([[7.0, 8.0], [9.0, 9.5, 10.0]], pa.list_(pa.float32()))}), path, mode="append")
    set_dim = f"ALTER TABLE {table_name} SET TBLPROPERTIES ('emb.arrow.fixed-size-list.size' = '3')"
    before = lance.dataset(path).version
    # Refused, naming the first offending row (address and key) and the length found; nothing committed.
    _fails(lambda: spark.sql(set_dim), "LANCE_SCHEMA_CHANGE_REFUSED", "'emb'", "vector of 3 items", "1 row(s)",
           "_rowaddr 4294967296 (fragment 1, offset 0)", "where id = 4", "an array of 2 items")
    assert lance.dataset(path).version == before

    spark.sql(f"DELETE FROM {table_name} WHERE id = 4")
    spark.sql(set_dim)
    ds = lance.dataset(path)
    assert ds.version == before + 2 and ds.schema.field("emb").type == pa.list_(pa.float32(), 3)
    assert ds.validate() is None
    assert ds.to_table().sort_by("id").to_pylist() == [
        {"id": 1, "emb": [1.0, 2.0, 3.0]}, {"id": 2, "emb": [4.0, None, 6.0]}, {"id": 3, "emb": None},
        {"id": 5, "emb": [9.0, 9.5, 10.0]}]
    # Older versions read as they were; change data reads across the conversion.
    assert lance.dataset(path, version=before).schema.field("emb").type == pa.list_(pa.float32())
    assert [r.id for r in spark.sql(f"SELECT id FROM {table_name} VERSION AS OF {before} ORDER BY id").collect()] == [1, 2, 3, 4, 5]
    changes = spark.sql(f"SELECT id, emb, _change_type FROM {table_name} CHANGES FROM VERSION 1 TO VERSION {before + 2} "
                        "WHERE _change_type = 'insert' ORDER BY id").collect()
    # (Lance counts a column rewrite as an update of every row: rows show up again at the conversion.)
    assert {(r.id, tuple(r.emb or ())) for r in changes} >= {(1, (1.0, 2.0, 3.0)), (2, (4.0, None, 6.0)), (3, ())}, changes
    # The statement again changes nothing; another dimension is refused by its lengths.
    spark.sql(set_dim)
    assert lance.dataset(path).version == before + 2
    _fails(lambda: spark.sql(f"ALTER TABLE {table_name} SET TBLPROPERTIES ('emb.arrow.fixed-size-list.size' = '4')"),
           "a vector of 3 items already")
    assert "'emb.arrow.fixed-size-list.size' = '3'" in spark.sql(f"SHOW CREATE TABLE {table_name}").collect()[0][0]
    # Spark appends vectors; pylance appends too, and builds a vector index on the column.
    spark.sql(f"INSERT INTO {table_name} VALUES (6, array(1, 1, 1))")
    lance.write_dataset(pa.table({"id": pa.array([7], pa.int64()), "emb": pa.array([[2.0, 2.0, 2.0]], pa.list_(pa.float32(), 3))}),
                        path, mode="append")
    assert lance.dataset(path).count_rows() == 6 and lance.dataset(path).validate() is None
    assert spark.table(table_name).count() == 6


def test_writes_of_other_lengths_and_dimensions_are_refused(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT, emb ARRAY<FLOAT>, tags ARRAY<FLOAT>) "
              "TBLPROPERTIES ('emb.arrow.fixed-size-list.size' = '4')")
    _fails(lambda: spark.sql(f"INSERT INTO {table_name} VALUES (1, array(1, 2, 3, 4), NULL), (2, array(1, 2, 3), NULL)"),
           "LANCE_INVALID_VALUE", "'emb'", "vectors of 4 items", "an array of 3", "in the row where id = 2")
    df = spark.createDataFrame([(1, [1.0, 2.0, 3.0, 4.0], [1.0, 2.0])], "id BIGINT, emb ARRAY<FLOAT>, tags ARRAY<FLOAT>")
    # Data tagged as vectors of another dimension than the column's, or as vectors for a list column.
    _fails(lambda: df.withMetadata("emb", {"lance.vector_dim": 8}).writeTo(table_name).append(),
           "LANCE_INVALID_VALUE", "'emb'", "vectors of 8 items", "a vector of 4 items")
    _fails(lambda: df.withMetadata("emb", {"arrow.fixed-size-list.size": 8}).write.insertInto(table_name),
           "'emb'", "vectors of 8 items", "a vector of 4 items")
    _fails(lambda: df.withMetadata("tags", {"lance.vector_dim": 2}).writeTo(table_name).append(),
           "'tags'", "vectors of 2 items", "a list (ARRAY<FLOAT>), not a vector")
    assert lance.dataset(path).count_rows() == 0
    # Tags that agree, and untagged arrays of the right length, go in.
    df.withMetadata("emb", {"lance.vector_dim": 4}).writeTo(table_name).append()
    df.writeTo(table_name).append()
    ds = lance.dataset(path)
    assert ds.count_rows() == 2 and ds.schema.field("emb").type == pa.list_(pa.float32(), 4)
    assert ds.schema.field("tags").type == pa.list_(pa.float32()) and ds.validate() is None
