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

  test("vector_search, the session extension's table function, finds the nearest rows by each distance as this Spark plans it") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.pd")
    sql("CREATE TABLE lance.pd.vec (id BIGINT, emb ARRAY<FLOAT>) TBLPROPERTIES ('emb.arrow.fixed-size-list.size' = '3')")
    val random = new scala.util.Random(33)
    val vectors = (0 until 200).map(i => i.toLong -> Array.fill(3)(random.nextGaussian().toFloat))
    sql("INSERT INTO lance.pd.vec VALUES " + vectors.map { case (i, v) => s"($i, array(${v.map(x => s"CAST($x AS FLOAT)").mkString(", ")}))" }.mkString(", "))
    val query = Array(0.3f, -0.2f, 0.9f)
    def dot(a: Array[Float]) = a.zip(query).map { case (x, y) => x.toDouble * y }.sum
    def norm(a: Array[Float]) = math.sqrt(a.map(x => x.toDouble * x).sum)
    val distances = Map[String, Array[Float] => Double](
      "l2" -> (v => v.zip(query).map { case (x, y) => (x.toDouble - y) * (x - y) }.sum),
      "cosine" -> (v => 1 - dot(v) / (norm(v) * norm(query))),
      "dot" -> (v => 1 - dot(v)))
    for ((metric, distance) <- distances) {
      val got = sql(s"SELECT id, _distance FROM vector_search(table => 'lance.pd.vec', vector_column => 'emb', " +
        s"query_vector => array(${query.mkString(", ")}), k => 5, distance_type => '$metric')").collect()
      val expected = vectors.sortBy { case (i, v) => (distance(v), i) }.take(5)
      assert(got.map(_.getLong(0)).toSeq == expected.map(_._1), metric)
      got.zip(expected).foreach { case (row, (_, v)) => assert(math.abs(row.getFloat(1) - distance(v)) < 1e-4, metric) }
    }
    // A top-k of each task's rows, never a sort of all of them.
    val plan = sql("SELECT * FROM vector_search('lance.pd.vec', 'emb', array(1.0, 2.0, 3.0), 3)").queryExecution.executedPlan.toString
    assert(plan.contains("TakeOrderedAndProject") && !plan.contains("Sort ["), plan)
    // With an l2 index, ORDER BY vector_l2_distance ... LIMIT reads the rows the index names
    // (NearestByIndexRule, which matches the plan this Spark makes of Spark's vector functions).
    sql("CALL lance.system.create_index(table => 'pd.vec', column => 'emb', index_type => 'IVF_FLAT', num_partitions => 2)")
    // A setting that is not a number is a typed error naming it, wherever the search is planned.
    for ((setting, statement) <- Seq(
        "nprobes" -> "SELECT id FROM lance.pd.vec ORDER BY vector_l2_distance(emb, array(1f, 2f, 3f)) LIMIT 3",
        "driver_read_rows" -> "SELECT id FROM vector_search('lance.pd.vec', 'emb', array(1.0, 2.0, 3.0), 3)")) {
      withSQLConf(sparklance.spark.search.SearchSettings.Prefix + setting -> "two") {
        val e = intercept[Exception](sql(statement).collect())
        assert(e.getMessage.contains("LANCE_INVALID_OPTION") && e.getMessage.contains(s"vector_search.$setting"), s"$statement: $e")
      }
    }
    // The index's answer: its few rows read on the driver (no Spark job), as a job reads them.
    val bySearch = s"SELECT * FROM vector_search(table => 'lance.pd.vec', vector_column => 'emb', query_vector => " +
      s"array(${query.mkString(", ")}), k => 5, nprobes => 2)"
    val (local, jobs) = jobsOf(sql(bySearch).collect())
    assert(jobs == 0 && local.length == 5)
    val (byJob, jobsByJob) = withSQLConf(sparklance.spark.search.HitRows.MaxRowsConf -> "0")(jobsOf(sql(bySearch).collect()))
    assert(jobsByJob > 0 && byJob.toSeq == local.toSeq)
    assert(local.map(_.getLong(0)).toSeq == vectors.sortBy { case (i, v) => (distances("l2")(v), i) }.take(5).map(_._1))
    withSQLConf("spark.sparklance.vector_search.nprobes" -> "2") {
      val ordered = sql(s"SELECT id FROM lance.pd.vec WHERE id % 2 = 0 ORDER BY vector_l2_distance(emb, array(${query.map(x => s"${x}f").mkString(", ")})) LIMIT 5")
      val optimized = ordered.queryExecution.optimizedPlan.toString
      assert("""_rowid#\d+L IN \(""".r.findFirstIn(optimized).isDefined, optimized)
      val l2 = distances("l2")
      val expected = vectors.filter(_._1 % 2 == 0).sortBy { case (i, v) => (l2(v), i) }.take(5).map(_._1)
      assert(ordered.collect().map(_.getLong(0)).toSeq == expected)
      // A query that reads _rowid itself gets each candidate once, with its id.
      val withIds = sql(s"SELECT id, _rowid FROM lance.pd.vec WHERE id % 2 = 0 ORDER BY vector_l2_distance(emb, " +
        s"array(${query.map(x => s"${x}f").mkString(", ")})) LIMIT 5").collect()
      val ids = sql(s"SELECT id, _rowid FROM lance.pd.vec WHERE id IN (${expected.mkString(", ")})").collect()
        .map(r => r.getLong(0) -> r.getLong(1)).toMap
      assert(withIds.map(r => r.getLong(0) -> r.getLong(1)).toSeq == expected.map(i => i -> ids(i)))
    }
  }
}
