package sparklance.spark

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.scalatest.funsuite.AnyFunSuite

class ScanPushdownSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {
  /** Rows the Lance scan produced while running `df` (what was decoded, before Spark's own filters). */
  private def scannedRows(df: DataFrame): Long = {
    df.collect()
    collect(df.queryExecution.executedPlan) { case s: BatchScanExec => s.metrics("numOutputRows").value }.sum
  }

  private lazy val table = {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.pd")
    sql("CREATE TABLE lance.pd.t (id BIGINT, s STRING) TBLPROPERTIES ('max_rows_per_file' = '1000', 'optimize_write' = 'false')")
    sql("INSERT INTO lance.pd.t SELECT /*+ COALESCE(1) */ id, CAST(id AS STRING) FROM range(5000)")
    "lance.pd.t"
  }

  test("_fragid predicates prune fragments") {
    val df = sql(s"SELECT id FROM $table WHERE _fragid IN (1, 3)")
    assert(scannedRows(df) == 2000)
    assert(df.collect().map(_.getLong(0)).sorted.toSeq == ((1000 until 2000) ++ (3000 until 4000)))
  }

  test("LIMIT reads only the first fragment") {
    val df = sql(s"SELECT * FROM $table LIMIT 10")
    assert(scannedRows(df) <= 1000)
    assert(df.collect().length == 10)
  }

  test("other predicates are evaluated by Spark on every row") {
    val df = sql(s"SELECT id FROM $table WHERE id % 1000 = 5")
    assert(df.collect().map(_.getLong(0)).sorted.toSeq == Seq(5L, 1005L, 2005L, 3005L, 4005L))
  }

  test("_rowid predicates read only the named rows, found with the row id index") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.pd")
    sql("CREATE TABLE lance.pd.ids (id BIGINT, s STRING) TBLPROPERTIES ('max_rows_per_file' = '1000', 'enable_stable_row_ids' = 'true', 'optimize_write' = 'false')")
    sql("INSERT INTO lance.pd.ids SELECT /*+ COALESCE(1) */ id, CAST(id AS STRING) FROM range(5000)")
    // Move rows 10 and 2500 to a new fragment: their ids stay, their addresses change.
    sql("UPDATE lance.pd.ids SET s = 'moved' WHERE id IN (10, 2500)")
    sql("DELETE FROM lance.pd.ids WHERE id = 4000")
    val df = sql("SELECT id, s FROM lance.pd.ids WHERE _rowid IN (10, 2500, 4000, 4999, 123456)")
    assert(scannedRows(df) == 3)
    assert(df.collect().map(r => (r.getLong(0), r.getString(1))).sortBy(_._1).toSeq ==
      Seq((10L, "moved"), (2500L, "moved"), (4999L, "4999")))
    // Without stable row ids the row id is the address; the same pushdown applies.
    val plain = sql(s"SELECT id FROM $table WHERE _rowid = ${(2L << 32) | 7}")
    assert(scannedRows(plain) == 1)
    assert(plain.collect().map(_.getLong(0)).toSeq == Seq(2007L))
  }

  test("_rowid predicates naming offsets a fragment does not have, 2^31 and above included, read nothing for them") {
    // Offsets 2^31 and up are negative as Ints; they must stay offsets of the named fragment.
    val named = Seq(7L, 5000L, 1L << 31, (1L << 32) - 1, (2L << 32) | (1L << 31), (2L << 32) | 8, -1L)
    val df = sql(s"SELECT id, _rowaddr FROM $table WHERE _rowid IN (${named.mkString(", ")})")
    assert(df.collect().map(r => (r.getLong(0), r.getLong(1))).sorted.toSeq == Seq((7L, 7L), (2008L, (2L << 32) | 8)))
    assert(scannedRows(df) == 2)
  }
}
