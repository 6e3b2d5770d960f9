package sparklance.spark

import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.table.Dataset

/** Appends write about one fragment per `max_rows_per_file`, not one per input partition. */
class OptimizedWriteSuite extends AnyFunSuite with LocalSpark {  private def fragments(table: String): Int = {
    val catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
    val ident = org.apache.spark.sql.connector.catalog.Identifier.of(Array("ow"), table)
    new Dataset(catalog.storage, catalog.tablePath(ident)).snapshot().fragments.size
  }

  test("an append of 20 partitions makes one fragment per max_rows_per_file; optimize_write = false keeps one per task") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.ow")
    sql("CREATE TABLE lance.ow.opt (id BIGINT, s STRING)")
    sql("CREATE TABLE lance.ow.plain (id BIGINT, s STRING) TBLPROPERTIES ('optimize_write' = 'false')")
    val input = spark.range(0, 200000, 1, 20).selectExpr("id", "CAST(id AS STRING) AS s")
    input.writeTo("lance.ow.opt").append()
    input.writeTo("lance.ow.plain").append()
    assert(fragments("opt") == 1 && fragments("plain") == 20)
    for (t <- Seq("opt", "plain"))
      assert(sql(s"SELECT count(*), sum(id), count(DISTINCT s) FROM lance.ow.$t").collect().head.toSeq == Seq(200000L, 19999900000L, 200000L))
    // A write option overrides the table, and max_rows_per_file still cuts the files.
    input.writeTo("lance.ow.opt").option("optimize_write", "false").append()
    assert(fragments("opt") == 21)
    sql("CREATE TABLE lance.ow.cut (id BIGINT) TBLPROPERTIES ('max_rows_per_file' = '50000')")
    spark.range(0, 200000, 1, 20).writeTo("lance.ow.cut").append()
    assert(fragments("cut") == 4)
    val e = intercept[InvalidTablePropertyException](sql("CREATE TABLE lance.ow.bad (id BIGINT) TBLPROPERTIES ('optimize_write' = 'yes')"))
    assert(e.getMessage.contains("optimize_write") && e.getMessage.contains("yes"))
  }

  test("the write's shuffle is cut into tasks of even shares under one fragment's rows, never merging past one") {
    import org.apache.spark.sql.execution.{CoalescedPartitionSpec, ShufflePartitionSpec}
    import sparklance.spark.write.FragmentSizedShuffle.specs
    def ranges(s: Option[Seq[ShufflePartitionSpec]]) = s.get.map { case c: CoalescedPartitionSpec => (c.startReducerIndex, c.endReducerIndex); case o => fail(o.toString) }
    // At most one fragment's rows: one task, whatever the bytes.
    assert(ranges(specs(Array.fill(8)(1000L), 1000, 1000)) == Seq(0 -> 8))
    // 40 partitions of 1,250 rows (100 bytes each), 15,000 rows per file: 4 even tasks of 12,500 rows.
    assert(ranges(specs(Array.fill(40)(125000L), 50000, 15000)) == Seq(0 -> 10, 10 -> 20, 20 -> 30, 30 -> 40))
    // 10 partitions of 900 rows, 1,000 per file: 10 tasks; none merges two partitions (1,800 rows > 980).
    assert(ranges(specs(Array.fill(10)(9L), 9000, 1000)) == (0 until 10).map(p => p -> (p + 1)))
    // Uneven partitions: no task is planned over 98% of a fragment's rows.
    val rnd = new scala.util.Random(7)
    for (_ <- 1 to 200) {
      val bytes = Array.fill(1 + rnd.nextInt(60))(1L + rnd.nextInt(5000).toLong)
      val rows = bytes.sum / 10 + 1
      val perFile = 1L + rnd.nextInt(rows.toInt)
      val got = specs(bytes, rows, perFile)
      if (got.isEmpty) assert(rows > perFile && bytes.exists(_ > perFile * 0.98 * bytes.sum / rows - 1))
      if (got.isDefined) assert(ranges(got).flatMap { case (a, b) => a until b } == bytes.indices)
      val perByte = rows.toDouble / bytes.sum
      if (got.isDefined) for ((a, b) <- ranges(got) if b - a > 1) assert(bytes.slice(a, b).sum * perByte <= perFile * 0.98 + 1e-6)
    }
    // A partition over 98% of a fragment: too coarse to group, Spark's plan stays.
    assert(specs(Array(10L, 100L, 10L), 120, 60).isEmpty && specs(Array.fill(10)(10L), 10000, 1000).isEmpty)
  }
}
