package sparklance.spark

import org.apache.spark.sql.Row
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.io.LocalStorage
import sparklance.format.table.Dataset

class NestedTypesSuite extends AnyFunSuite with LocalSpark {
  private def vectorField(name: String, dim: Int, element: DataType = FloatType) =
    StructField(name, ArrayType(element, containsNull = false), nullable = true,
      new MetadataBuilder().putLong(SparkTypes.VectorDimension, dim).build())

  test("arrays, structs, arrays of structs and nested structs round trip") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.nt")
    sql("""CREATE TABLE lance.nt.t (id INT, ints ARRAY<INT>, strs ARRAY<STRING>,
          st STRUCT<a: INT, b: STRING, inner: STRUCT<x: DOUBLE, y: ARRAY<BIGINT>>>,
          lst ARRAY<STRUCT<k: STRING, v: INT>>)""")
    sql("""INSERT INTO lance.nt.t VALUES
          (1, array(1, 2, NULL), array('a', NULL, ''), named_struct('a', 1, 'b', 'x', 'inner', named_struct('x', 1.5, 'y', array(7L))),
           array(named_struct('k', 'p', 'v', 1), named_struct('k', NULL, 'v', NULL))),
          (2, NULL, array(), named_struct('a', NULL, 'b', NULL, 'inner', named_struct('x', NULL, 'y', NULL)), NULL),
          (3, array(), NULL, named_struct('a', 3, 'b', 'z', 'inner', named_struct('x', -2.0, 'y', array())), array())""")
    val got = sql("SELECT * FROM lance.nt.t ORDER BY id").collect().toSeq
    assert(got == Seq(
      Row(1, Seq(1, 2, null), Seq("a", null, ""), Row(1, "x", Row(1.5, Seq(7L))), Seq(Row("p", 1), Row(null, null))),
      Row(2, null, Seq(), Row(null, null, Row(null, null)), null),
      Row(3, Seq(), null, Row(3, "z", Row(-2.0, Seq())), Seq())))
    // Nested projection reads only the requested children.
    assert(sql("SELECT st.inner.y, lst.k FROM lance.nt.t ORDER BY id").collect().toSeq ==
      Seq(Row(Seq(7L), Seq("p", null)), Row(null, null), Row(Seq(), Seq())))
    assert(sql("SELECT count(*) FROM lance.nt.t WHERE st.a IS NULL").head().getLong(0) == 1)
  }

  test("ARRAY columns with a vector dimension are stored as fixed-size lists and keep it") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.nt")
    val schema = StructType(Seq(StructField("id", IntegerType), vectorField("emb", 4), vectorField("dbl", 2, DoubleType)))
    val rows = (0 until 1000).map(i => Row(i, if (i % 7 == 0) null else Seq.tabulate(4)(k => i + k * 0.25f), Seq(i * 1.0, -i * 1.0)))
    spark.createDataFrame(spark.sparkContext.parallelize(rows, 3), schema).writeTo("lance.nt.vec").create()
    val snap = new Dataset(LocalStorage, warehouse.resolve("nt/vec.lance").toString).snapshot()
    assert(snap.schema.field("emb").get.logicalType == "fixed_size_list:float:4")
    assert(snap.schema.field("dbl").get.logicalType == "fixed_size_list:double:2")
    val back = spark.table("lance.nt.vec")
    assert(back.schema("emb").metadata.getLong(SparkTypes.VectorDimension) == 4)
    assert(back.orderBy("id").collect().toSeq.map(r => (r.getInt(0), Option(r.getSeq[Float](1)), r.getSeq[Double](2))) ==
      rows.map(r => (r.getInt(0), Option(r.getSeq[Float](1)), r.getSeq[Double](2))))
    // CTAS keeps the dimension: the copy is a vector column too.
    sql("CREATE TABLE lance.nt.vec2 AS SELECT * FROM lance.nt.vec")
    val copy = new Dataset(LocalStorage, warehouse.resolve("nt/vec2.lance").toString).snapshot()
    assert(copy.schema.field("emb").get.logicalType == "fixed_size_list:float:4")
    val wrong = intercept[Exception](sql("INSERT INTO lance.nt.vec VALUES (5000, array(1.0F, 2.0F), array(1.0D, 2.0D))").collect())
    assert(wrong.getMessage.contains("vectors of 4 items"), wrong.getMessage)
  }

  test("types 2.0 cannot store are refused clearly") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.nt")
    for (version <- Seq("2.0", "2.1")) {
      val map = intercept[Exception](sql(s"CREATE TABLE lance.nt.m (st STRUCT<m: MAP<STRING, INT>>) " +
        s"TBLPROPERTIES ('data_storage_version' = '$version')"))
      assert(map.getMessage.contains("'st'") && map.getMessage.contains("stores maps from data_storage_version 2.2"), map.getMessage)
    }
    sql("CREATE TABLE lance.nt.m20 (id INT) TBLPROPERTIES ('data_storage_version' = '2.0')")
    val added = intercept[Exception](sql("ALTER TABLE lance.nt.m20 ADD COLUMN m MAP<STRING, INT>"))
    assert(added.getMessage.contains("stores maps from data_storage_version 2.2"), added.getMessage)
    sql("CREATE TABLE lance.nt.s (id INT, st STRUCT<a: INT>) TBLPROPERTIES ('data_storage_version' = '2.0')")
    val nullStruct = intercept[Exception](sql("INSERT INTO lance.nt.s VALUES (1, NULL)").collect())
    assert(nullStruct.getMessage.contains("2.0"), nullStruct.getMessage)
    assert(sql("SELECT * FROM lance.nt.s").collect().isEmpty)
    // 2.1+ files store struct-level nulls.
    sql("CREATE TABLE lance.nt.s22 (id INT, st STRUCT<a: INT>)")
    sql("INSERT INTO lance.nt.s22 VALUES (1, NULL), (2, named_struct('a', NULL)), (3, named_struct('a', 3))")
    assert(sql("SELECT * FROM lance.nt.s22 ORDER BY id").collect().toSeq == Seq(Row(1, null), Row(2, Row(null)), Row(3, Row(3))))
  }

  test("MAP columns on 2.2: nulls at every level, nested in structs and lists, read back by pylance and written by it") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.nt")
    sql("""CREATE TABLE lance.nt.maps (id INT, m MAP<STRING, INT>, st STRUCT<a: INT, tags: MAP<INT, STRING>>,
          lm ARRAY<MAP<STRING, STRUCT<x: DOUBLE, y: STRING>>>, big MAP<BIGINT, ARRAY<INT>>)""")
    sql("""INSERT INTO lance.nt.maps VALUES
          (1, map('a', 1, 'b', NULL), named_struct('a', 1, 'tags', map(1, 'one', 2, NULL)),
           array(map('k', named_struct('x', 1.5, 'y', 'p')), NULL, map()), map(10L, array(1, NULL), 11L, NULL)),
          (2, NULL, NULL, NULL, NULL),
          (3, map(), named_struct('a', NULL, 'tags', NULL), array(), map()),
          (4, map('z', 26), named_struct('a', 4, 'tags', map()), array(map('q', NULL)), map(-1L, array()))""")
    val want = Seq(
      Row(1, Map("a" -> 1, "b" -> null), Row(1, Map(1 -> "one", 2 -> null)), Seq(Map("k" -> Row(1.5, "p")), null, Map()),
        Map(10L -> Seq(1, null), 11L -> null)),
      Row(2, null, null, null, null),
      Row(3, Map(), Row(null, null), Seq(), Map()),
      Row(4, Map("z" -> 26), Row(4, Map()), Seq(Map("q" -> null)), Map(-1L -> Seq())))
    assert(sql("SELECT * FROM lance.nt.maps ORDER BY id").collect().toSeq == want)
    assert(sql("SELECT id, m['a'], st.tags[1], size(big) FROM lance.nt.maps ORDER BY id").collect().toSeq ==
      Seq(Row(1, 1, "one", 2), Row(2, null, null, null), Row(3, null, null, 0), Row(4, null, null, 1)))
    val path = new Dataset(LocalStorage, warehouse.resolve("nt/maps.lance").toString).path
    val script = java.nio.file.Files.createTempFile("maps", ".py")
    java.nio.file.Files.writeString(script, """import sys, lance, pyarrow as pa
ds = lance.dataset(sys.argv[1])
print(ds.schema.field("m").type, ds.schema.field("lm").type)
print(ds.to_table().sort_by("id").to_pylist())
t = pa.table({"id": pa.array([5], pa.int32()), "m": pa.array([[("w", 23)]], pa.map_(pa.string(), pa.int32()))})
lance.write_dataset(t, sys.argv[1], mode="append")
""")
    val out = sparklance.format.Pylance.run(script, path).trim.linesIterator.toSeq.takeRight(2)
    assert(out.head == "map<string, int32> list<item: map<string, struct<x: double, y: string>>>")
    assert(out(1).startsWith("[{'id': 1, 'm': [('a', 1), ('b', None)], 'st': {'a': 1, 'tags': [(1, 'one'), (2, None)]}, " +
      "'lm': [[('k', {'x': 1.5, 'y': 'p'})], None, []], 'big': [(10, [1, None]), (11, None)]}, " +
      "{'id': 2, 'm': None, 'st': None, 'lm': None, 'big': None}"), out(1))
    // pylance's own map (and an UPDATE of the other maps) read back.
    sql("UPDATE lance.nt.maps SET m = map_concat(m, map('u', id)) WHERE id IN (1, 4)")
    assert(sql("SELECT id, m FROM lance.nt.maps ORDER BY id").collect().toSeq == Seq(
      Row(1, Map("a" -> 1, "b" -> null, "u" -> 1)), Row(2, null), Row(3, Map()), Row(4, Map("z" -> 26, "u" -> 4)),
      Row(5, Map("w" -> 23))))
  }
}
