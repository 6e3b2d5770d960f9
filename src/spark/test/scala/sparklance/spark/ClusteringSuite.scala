package sparklance.spark

import org.apache.spark.sql.{AnalysisException, DataFrame, Row}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.InvalidOptionException

/**
 * CLUSTER BY and compaction layouts: the clustering columns are stored and shown, follow column
 * renames and drops; appends sort each task's rows by them; `compact` with `sort_by`, `zorder_by`
 * or `recluster` lays rows out across fragments, keeping every row (and its id and versions), so
 * that filters on any layout column read a fraction of the data.
 */
class ClusteringSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {
  private def bytesRead(df: DataFrame): Long = {
    df.collect()
    collect(df.queryExecution.executedPlan) { case s: BatchScanExec => s.metrics("dataBytesRead").value }.sum
  }

  private def property(table: String): Option[String] =
    sql(s"SHOW TBLPROPERTIES $table").collect().find(_.getString(0) == "clustering_columns").map(_.getString(1))

  test("CLUSTER BY at CREATE and ALTER is stored as clustering_columns, shown by DESCRIBE, and follows renames and drops") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cl")
    sql("CREATE TABLE lance.cl.c (a INT, b STRING, c DOUBLE) CLUSTER BY (a, b)")
    assert(property("lance.cl.c").contains("a,b"))
    // SHOW CREATE TABLE replays it (as the property).
    val shown = sql("SHOW CREATE TABLE lance.cl.c").head().getString(0)
    sql("DROP TABLE lance.cl.c")
    sql(shown)
    assert(property("lance.cl.c").contains("a,b"))
    sql("ALTER TABLE lance.cl.c CLUSTER BY (c)")
    assert(property("lance.cl.c").contains("c"))
    sql("ALTER TABLE lance.cl.c CLUSTER BY (b, c)")
    sql("ALTER TABLE lance.cl.c RENAME COLUMN b TO bb")
    assert(property("lance.cl.c").contains("bb,c"))
    sql("ALTER TABLE lance.cl.c DROP COLUMN c")
    assert(property("lance.cl.c").contains("bb"))
    sql("ALTER TABLE lance.cl.c CLUSTER BY NONE")
    assert(property("lance.cl.c").forall(_.isEmpty))
    // A CTAS keeps it too.
    sql("CREATE TABLE lance.cl.ctas CLUSTER BY (id) AS SELECT id, id % 7 AS m FROM range(100)")
    assert(property("lance.cl.ctas").contains("id"))
  }

  test("clustering columns the table lacks or cannot order by, and PARTITIONED BY, are refused and change nothing") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cl")
    val missing = intercept[AnalysisException](sql("CREATE TABLE lance.cl.bad (a INT) CLUSTER BY (z)"))
    assert(missing.getMessage.contains("z"), missing.getMessage)
    assert(!spark.catalog.tableExists("lance.cl.bad"))
    intercept[Exception](sql("CREATE TABLE lance.cl.bad (a INT) PARTITIONED BY (a)"))
    sql("CREATE TABLE lance.cl.arr (a INT, v ARRAY<INT>)")
    val unordered = intercept[AnalysisException](sql("ALTER TABLE lance.cl.arr CLUSTER BY (v)"))
    assert(unordered.getMessage.contains("'v'"), unordered.getMessage)
    assert(property("lance.cl.arr").isEmpty)
  }

  test("appends into a clustered table write each fragment's rows in clustering order") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cl")
    sql("CREATE TABLE lance.cl.app (k BIGINT, v STRING) CLUSTER BY (k) TBLPROPERTIES ('optimize_write' = 'false')")
    sql("INSERT INTO lance.cl.app SELECT /*+ REPARTITION(3) */ xxhash64(id) % 1000, CAST(id AS STRING) FROM range(3000)")
    val rows = sql("SELECT _fragid, _rowaddr, k FROM lance.cl.app").collect().toSeq
    assert(rows.size == 3000)
    for ((_, fragment) <- rows.groupBy(_.getInt(0))) {
      val keys = fragment.sortBy(_.getLong(1)).map(_.getLong(2))
      assert(keys == keys.sorted, "a fragment's rows are not in clustering order")
    }
  }

  test("compact zorder_by / sort_by lay rows out across fragments: same rows, ids and versions, filters on either column read a fraction") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cl")
    sql("CREATE TABLE lance.cl.z (a INT, b INT, s STRING) TBLPROPERTIES ('enable_stable_row_ids' = 'true', " +
      "'optimize_write' = 'false', 'max_rows_per_file' = '50000')")
    // Both columns random: every zone of the unclustered table spans (almost) every value.
    sql("INSERT INTO lance.cl.z SELECT /*+ COALESCE(1) */ CAST(abs(xxhash64(id, 1)) % 1000 AS INT), " +
      "CAST(abs(xxhash64(id, 2)) % 1000 AS INT), repeat(CAST(id AS STRING), 3) FROM range(200000)")
    sql("DELETE FROM lance.cl.z WHERE a = 500")
    val all = "SELECT a, b, s, _rowid, _row_created_at_version, _row_last_updated_at_version FROM lance.cl.z"
    val before = sql(all).collect().toSet
    val filters = Seq("a = 7", "b = 7", "a BETWEEN 100 AND 120", "b >= 990")
    val expected = filters.map(f => f -> sql(s"SELECT a, b, s FROM lance.cl.z WHERE $f").collect().toSet).toMap
    val unclustered = filters.map(f => f -> bytesRead(sql(s"SELECT a, b, s FROM lance.cl.z WHERE $f"))).toMap

    val report = sql("CALL lance.system.compact(table => 'cl.z', zorder_by => 'a, b', target_rows_per_fragment => 50000)").head()
    assert(report.getAs[Long]("fragments_removed") == 4 && report.getAs[Long]("fragments_added") == 3)
    assert(sql(all).collect().toSet == before)
    for (f <- filters) {
      val df = sql(s"SELECT a, b, s FROM lance.cl.z WHERE $f")
      assert(df.collect().toSet == expected(f), f)
      val read = bytesRead(sql(s"SELECT a, b, s FROM lance.cl.z WHERE $f"))
      // 200,000 rows are only about 24 zones: each spans about a quarter of either column's range.
      assert(read * 10 < unclustered(f) * 6, s"$f read $read bytes after Z-ordering, ${unclustered(f)} before")
    }

    // Clustered by both: a Hilbert curve, which skips at least as well.
    sql("ALTER TABLE lance.cl.z CLUSTER BY (b, a)")
    sql("CALL lance.system.compact(table => 'cl.z', recluster => true, target_rows_per_fragment => 50000)")
    assert(sql(all).collect().toSet == before)
    for (f <- filters) {
      assert(sql(s"SELECT a, b, s FROM lance.cl.z WHERE $f").collect().toSet == expected(f), f)
      val read = bytesRead(sql(s"SELECT a, b, s FROM lance.cl.z WHERE $f"))
      assert(read * 10 < unclustered(f) * 6, s"$f read $read bytes after clustering, ${unclustered(f)} before")
    }

    sql("CALL lance.system.compact(table => 'cl.z', sort_by => 'b')")
    assert(sql(all).collect().toSet == before)
    // Read once before it is measured, as every query measured here is: the process then keeps the
    // files' metadata, and the bytes compared are the pages'.
    assert(sql("SELECT a, b, s FROM lance.cl.z WHERE b = 7").collect().toSet == expected("b = 7"))
    val sorted = bytesRead(sql("SELECT a, b, s FROM lance.cl.z WHERE b = 7"))
    assert(sorted * 10 < unclustered("b = 7"), s"b = 7 read $sorted bytes sorted by b, ${unclustered("b = 7")} before")
  }

  test("compact on a clustered table: recluster lays out every fragment, a plain compact sorts what it merges") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cl")
    sql("CREATE TABLE lance.cl.r (k INT, s STRING) TBLPROPERTIES ('optimize_write' = 'false')")
    for (i <- 0 until 4) sql(s"INSERT INTO lance.cl.r SELECT /*+ COALESCE(1) */ CAST(abs(xxhash64(id)) % 10000 AS INT), " +
      s"CAST(id AS STRING) FROM range(${i * 5000}, ${i * 5000 + 5000})")
    val before = sql("SELECT k, s FROM lance.cl.r").collect().toSet
    val refused = intercept[AnalysisException](sql("CALL lance.system.compact(table => 'cl.r', recluster => true)").collect())
    assert(refused.getCondition == "LANCE_INVALID_OPTION" && refused.getCause.isInstanceOf[InvalidOptionException])
    sql("ALTER TABLE lance.cl.r CLUSTER BY (k)")
    sql("CALL lance.system.compact(table => 'cl.r', recluster => true, target_rows_per_fragment => 5000)")
    assert(sql("SELECT k, s FROM lance.cl.r").collect().toSet == before)
    val placed = sql("SELECT _fragid, _rowaddr, k FROM lance.cl.r").collect().toSeq.sortBy(r => (r.getInt(0), r.getLong(1))).map(_.getInt(2))
    assert(placed == placed.sorted, "reclustered rows are not in k order across fragments")
    // Small appended fragments merged by a plain compaction come out sorted.
    for (i <- 0 until 3) sql(s"INSERT INTO lance.cl.r SELECT /*+ COALESCE(1) */ CAST(abs(xxhash64(id)) % 10000 AS INT), " +
      s"CAST(id AS STRING) FROM range(${100000 + i * 100}, ${100000 + i * 100 + 100})")
    sql("CALL lance.system.compact(table => 'cl.r', target_rows_per_fragment => 5000)")
    val last = sql("SELECT _fragid, _rowaddr, k FROM lance.cl.r").collect().toSeq.groupBy(_.getInt(0)).maxBy(_._1)._2
    assert(last.size >= 300)
    val keys = last.sortBy(_.getLong(1)).map(_.getInt(2))
    assert(keys == keys.sorted, "the merged fragment's rows are not in k order")
  }

  test("layout options are checked before anything is written") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cl")
    sql("CREATE TABLE lance.cl.e (a INT, m MAP<STRING, INT>)")
    sql("INSERT INTO lance.cl.e SELECT id, map('x', 1) FROM range(10)")
    val version = sql("SELECT max(version) FROM lance.cl.e.history").head().getLong(0)
    for ((call, named) <- Seq(
        "zorder_by => 'a, nope'" -> "'nope'", "sort_by => 'm'" -> "'m'", "sort_by => 'a', zorder_by => 'a'" -> "zorder_by",
        "zorder_by => 'a, a'" -> "twice")) {
      val e = intercept[AnalysisException](sql(s"CALL lance.system.compact(table => 'cl.e', $call)").collect())
      assert(e.getCondition == "LANCE_INVALID_OPTION" && e.getMessage.contains(named), e.getMessage)
    }
    assert(sql("SELECT max(version) FROM lance.cl.e.history").head().getLong(0) == version)
  }
}
