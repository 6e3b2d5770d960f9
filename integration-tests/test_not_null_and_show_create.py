"""NOT NULL columns from PySpark (created from a DataFrame, or tightened on an existing table after a
check of the data) and SHOW CREATE TABLE that replays a table with vectors, blobs, NOT NULL and nested
columns (issue 32 item 5). Every table's schema is checked as pylance 14.0.2 sees it."""
import lance
import pyarrow as pa
import pytest

import sparklance
from conftest import table_path


def _field(path, dotted):
    """The pyarrow field at `dotted` (s.a) of the table at `path`, as pylance reads its schema."""
    names = dotted.split(".")
    field = lance.dataset(path).schema.field(names[0])
    for n in names[1:]:
        field = field.type.field(n)
    return field


def _fails(call, *says):
    with pytest.raises(Exception) as err:
        call()
    for s in says:
        assert s in str(err.value), str(err.value)[:2000]


def test_writeto_create_with_not_null_columns(spark, warehouse, table_name):
    df = spark.createDataFrame([(1, "a", (10, "x")), (2, None, (20, None))], "id BIGINT, name STRING, s STRUCT<a: INT, b: STRING>")
    df.writeTo(table_name).tableProperty("not_null_columns", "id, s.a").create()
    path = table_path(warehouse, table_name)
    schema = spark.table(table_name).schema
    assert not schema["id"].nullable and schema["name"].nullable and not schema["s"].dataType["a"].nullable
    assert not _field(path, "id").nullable and _field(path, "name").nullable and not _field(path, "s.a").nullable
    assert _field(path, "s").nullable and _field(path, "s.b").nullable
    # A declaration, not a stored property.
    assert "not_null_columns" not in {r.key for r in spark.sql(f"SHOW TBLPROPERTIES {table_name}").collect()}
    assert "not_null_columns" not in lance.dataset(path).metadata

    # A NULL in such a column fails the write (Spark's check, naming the column); nothing is committed.
    version = lance.dataset(path).version
    _fails(lambda: spark.createDataFrame([(None, "c", (1, "y"))], df.schema).writeTo(table_name).append(),
           "NOT_NULL_ASSERT_VIOLATION", "\nid\n")
    assert lance.dataset(path).version == version

    # pylance appends rows with values, and refuses a NULL in the non-nullable column.
    ds = lance.dataset(path)
    good = pa.table({"id": pa.array([3], pa.int64()), "name": ["c"],
                     "s": pa.array([{"a": 30, "b": "z"}], ds.schema.field("s").type)}, schema=ds.schema)
    lance.write_dataset(good, path, mode="append")
    assert sorted(r.id for r in spark.table(table_name).collect()) == [1, 2, 3]
    bad = pa.table({"id": pa.array([None], pa.int64()), "name": ["d"],
                    "s": pa.array([{"a": 40, "b": "w"}], ds.schema.field("s").type)})
    _fails(lambda: lance.write_dataset(bad, path, mode="append"),
           "The field `id` contained null values even though the field is marked non-null")
    assert lance.dataset(path).count_rows() == 3 and lance.dataset(path).validate() is None


def test_ctas_with_a_null_in_a_not_null_column_leaves_no_table(spark, warehouse, table_name):
    _fails(lambda: spark.sql(f"CREATE TABLE {table_name} TBLPROPERTIES ('not_null_columns' = 'k') AS "
                             "SELECT * FROM VALUES (1), (NULL) AS v(k)"), "NOT_NULL_ASSERT_VIOLATION", "\nk\n")
    assert not spark.catalog.tableExists(table_name)
    _fails(lambda: spark.sql(f"CREATE TABLE {table_name} TBLPROPERTIES ('not_null_columns' = 'nope') AS SELECT 1 AS k"),
           "not_null_columns", "nope", "k")
    spark.sql(f"CREATE TABLE {table_name} TBLPROPERTIES ('not_null_columns' = 'k') AS SELECT * FROM VALUES (1), (2) AS v(k)")
    assert not _field(table_path(warehouse, table_name), "k").nullable


def test_catalog_keeping_the_query_nullability(spark, warehouse):
    """`use_nullable_query_schema = false` (Iceberg's use-nullable-query-schema): a DataFrame's
    NOT NULL columns stay NOT NULL."""
    spark.conf.set("spark.sql.catalog.lance_strict", sparklance.CATALOG_CLASS)
    spark.conf.set("spark.sql.catalog.lance_strict.warehouse", str(warehouse))
    spark.conf.set("spark.sql.catalog.lance_strict.use_nullable_query_schema", "false")
    df = spark.createDataFrame([(1, "a")], "id BIGINT NOT NULL, name STRING")
    df.writeTo("lance_strict.db.strict_create").create()
    path = table_path(warehouse, "lance.db.strict_create")
    assert not _field(path, "id").nullable and _field(path, "name").nullable
    # The default catalog makes them nullable, as Spark does.
    df.writeTo("lance.db.loose_create").create()
    assert _field(table_path(warehouse, "lance.db.loose_create"), "id").nullable


def test_set_not_null_checks_the_data(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    rows = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "name": ["a", None, "c", None],
                     "s": pa.array([{"a": 1}, {"a": None}, None, {"a": 4}], pa.struct([("a", pa.int32())]))})
    lance.write_dataset(rows, path)
    version = lance.dataset(path).version
    _fails(lambda: sparklance.set_not_null(spark, table_name, "name"), "'name'", "2 NULL value(s)")
    # A NULL struct is not a NULL field: only row 2's s.a counts.
    _fails(lambda: spark.sql(f"CALL lance.system.set_not_null(table => '{table_name[6:]}', column => 's.a')"),
           "'s.a'", "1 NULL value(s)")
    assert lance.dataset(path).version == version

    spark.sql(f"DELETE FROM {table_name} WHERE name IS NULL")
    row = sparklance.set_not_null(spark, table_name, "name", "s.a")
    ds = lance.dataset(path)
    assert row.version == ds.version == version + 2
    assert not ds.schema.field("name").nullable and not _field(path, "s.a").nullable and ds.schema.field("id").nullable
    assert not spark.table(table_name).schema["name"].nullable
    # pylance appends to the tightened table; Spark reads every row.
    lance.write_dataset(pa.table({"id": pa.array([5], pa.int64()), "name": ["e"],
                                  "s": pa.array([{"a": 5}], ds.schema.field("s").type)}, schema=ds.schema), path, mode="append")
    assert sorted(r.name for r in spark.table(table_name).collect()) == ["a", "c", "e"]
    assert lance.dataset(path).validate() is None
    # The SQL form (which Spark's analyzer refuses without sparklance's session extension) checks the same way.
    spark.sql(f"INSERT INTO {table_name} VALUES (NULL, 'f', named_struct('a', 6))")
    _fails(lambda: spark.sql(f"ALTER TABLE {table_name} ALTER COLUMN id SET NOT NULL"), "'id'", "1 NULL value(s)")
    spark.sql(f"DELETE FROM {table_name} WHERE id IS NULL")
    spark.sql(f"ALTER TABLE {table_name} ALTER COLUMN id SET NOT NULL")
    assert not lance.dataset(path).schema.field("id").nullable and not spark.table(table_name).schema["id"].nullable


def test_show_create_table_replays_vectors_blobs_and_not_null(spark, warehouse, table_name):
    """A pylance table with a vector, a blob, NOT NULL columns and a nested struct, and properties
    set by Spark: SHOW CREATE TABLE, DROP TABLE, run the statement: the same schema in Spark and in
    pylance (types, nullability, field metadata)."""
    path = table_path(warehouse, table_name)
    schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        pa.field("emb", pa.list_(pa.float32(), 4)),
        pa.field("img", pa.large_binary(), metadata={"lance-encoding:blob": "true"}),
        pa.field("s", pa.struct([pa.field("a", pa.int32(), nullable=False), pa.field("v", pa.list_(pa.float32(), 2))])),
        pa.field("note", pa.string()),
    ])
    data = pa.table({"id": [1, 2], "emb": [[1.0, 2.0, 3.0, 4.0], None], "img": [b"abc", None],
                     "s": [{"a": 1, "v": [0.5, 0.25]}, {"a": 2, "v": None}], "note": ["x", None]}, schema=schema)
    lance.write_dataset(data, path, data_storage_version="2.2")
    spark.sql(f"ALTER TABLE {table_name} SET TBLPROPERTIES ('max_rows_per_file' = '1000', 'owner.team' = 'search')")
    spark.sql(f"ALTER TABLE {table_name} ALTER COLUMN note COMMENT 'free text'")
    spark_before = spark.table(table_name).schema
    arrow_before = lance.dataset(path).schema

    statement = spark.sql(f"SHOW CREATE TABLE {table_name}").collect()[0][0]
    assert "'emb.arrow.fixed-size-list.size' = '4'" in statement and "'s.v.arrow.fixed-size-list.size' = '2'" in statement
    assert "'img.lance.encoding' = 'blob'" in statement and "id BIGINT NOT NULL" in statement
    assert "'version'" not in statement
    spark.sql(f"DROP TABLE {table_name} PURGE")
    spark.sql(statement)

    assert spark.table(table_name).schema == spark_before
    arrow_after = lance.dataset(path).schema
    assert arrow_after == arrow_before and [f.metadata for f in arrow_after] == [f.metadata for f in arrow_before], \
        f"{arrow_before}\n---\n{arrow_after}"
    # The recreated table takes rows as the original did, and pylance reads them.
    spark.sql(f"INSERT INTO {table_name} VALUES (7, array(1, 2, 3, 4), X'0102', named_struct('a', 1, 'v', array(1, 2)), 'n')")
    assert lance.dataset(path).to_table(columns=["id", "emb"]).to_pylist() == [{"id": 7, "emb": [1.0, 2.0, 3.0, 4.0]}]
    assert [b.read() for b in lance.dataset(path).take_blobs("img", indices=[0])] == [b"\x01\x02"]
