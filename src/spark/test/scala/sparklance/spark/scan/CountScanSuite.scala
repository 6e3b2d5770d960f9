package sparklance.spark.scan

import org.apache.spark.sql.Row
import org.apache.spark.sql.execution.LocalTableScanExec
import org.scalatest.funsuite.AnyFunSuite
import sparklance.spark.LocalSpark

class CountScanSuite extends AnyFunSuite with LocalSpark {
  test("COUNT(*) from metadata is planned as a local scan alone, and counts live rows") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    sql("CREATE TABLE lance.db.counted (id BIGINT, s STRING) TBLPROPERTIES ('max_rows_per_file' = '7', 'optimize_write' = 'false')")
    sql("INSERT INTO lance.db.counted SELECT /*+ COALESCE(1) */ id, CAST(id AS STRING) FROM range(100)")
    sql("DELETE FROM lance.db.counted WHERE id % 3 = 0")
    val live = sql("SELECT id FROM lance.db.counted").collect().length
    assert(live == 66)
    for (query <- Seq("SELECT count(*) FROM lance.db.counted", "SELECT count(*) AS n FROM lance.db.counted",
        "SELECT count(1) FROM lance.db.counted")) {
      val df = sql(query)
      assert(df.queryExecution.executedPlan.isInstanceOf[LocalTableScanExec], df.queryExecution.executedPlan.toString)
      // A local scan alone is collected on the driver (a Project above it made a job).
      assert(df.collect().toSeq == Seq(Row(live.toLong)), query)
    }
    assert(sql("SELECT count(*) AS n FROM lance.db.counted").schema.fieldNames.toSeq == Seq("n"))

    // Written elsewhere, the count is the same; the statement's read of the table is kept.
    sql("CREATE TABLE lance.db.counts (n BIGINT)")
    sql("INSERT INTO lance.db.counts SELECT count(*) FROM lance.db.counted")
    assert(sql("SELECT n FROM lance.db.counts").collect().toSeq == Seq(Row(66L)))
  }
}
