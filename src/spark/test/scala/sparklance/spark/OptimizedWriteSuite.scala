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
}
