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

  /** Runs the INSERT statement `insert`: whether its plan shuffled the rows for the write (the plan adaptive execution ran). */
  private def shuffled(insert: String): Boolean = sql(insert).queryExecution.commandExecuted match {
    case c: org.apache.spark.sql.catalyst.plans.logical.CommandResult => c.commandPhysicalPlan.toString.contains("REBALANCE_PARTITIONS_BY_COL")
    case other => fail(s"not a command: $other")
  }

  test("input partitions of several fragments each are written unshuffled, their partial fragments packed at commit") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.ow")
    // 3 partitions of 13,000 rows, 3,000 per file: 4 full fragments and a tail of 1,000 per task;
    // the three tails make one fragment: 13 = ceil(39,000 / 3,000), not 15.
    sql("CREATE TABLE lance.ow.big (id BIGINT, s STRING) TBLPROPERTIES ('max_rows_per_file' = '3000')")
    assert(!shuffled("INSERT INTO lance.ow.big SELECT id, CAST(id AS STRING) AS s FROM range(0, 39000, 1, 3)"))
    val catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
    val ds = new Dataset(catalog.storage, catalog.tablePath(org.apache.spark.sql.connector.catalog.Identifier.of(Array("ow"), "big")))
    val frags = ds.snapshot().fragments
    assert(frags.map(_.getPhysicalRows).sorted == Seq.fill(13)(3000L))
    assert(sql("SELECT count(*), sum(id), count(DISTINCT s), min(id), max(id) FROM lance.ow.big").collect().head.toSeq ==
      Seq(39000L, 39000L * 38999 / 2, 39000L, 0L, 38999L))
    // Each full fragment holds a contiguous run of ids, as its task read them.
    val runs = sql("SELECT _fragid, min(id), max(id), count(*) FROM lance.ow.big GROUP BY _fragid").collect()
      .map(r => (r.getLong(1), r.getLong(2), r.getLong(3)))
    assert(runs.count { case (lo, hi, n) => hi - lo + 1 == n } >= 12, runs.toSeq)
    // The packed fragment's zones were gathered too: a range filter over its rows finds them all.
    for ((lo, hi) <- Seq(12000L -> 12999L, 25500L -> 26200L, 38000L -> 38999L, 0L -> 38999L))
      assert(sql(s"SELECT count(*) FROM lance.ow.big WHERE id BETWEEN $lo AND $hi").collect().head.getLong(0) == hi - lo + 1)
    // A filter's rows are not counted (Spark estimates them as its input's, 1.2M): 1% of 1.2M rows
    // in 8 partitions keeps its shuffle and makes 4 fragments; unshuffled, its 8 tasks would leave
    // 8 partial fragments, too many rows to pack.
    sql("CREATE TABLE lance.ow.filtered (id BIGINT) TBLPROPERTIES ('max_rows_per_file' = '3000')")
    assert(shuffled("INSERT INTO lance.ow.filtered SELECT id FROM range(0, 1200000, 1, 8) WHERE id % 100 = 0"))
    assert(sql("SELECT count(*) FROM lance.ow.filtered GROUP BY _fragid").collect().map(_.getLong(0)).toSeq == Seq.fill(4)(3000L))
    // More input partitions than the driver packs the tails of alone: the shuffle stays.
    sql("CREATE TABLE lance.ow.many (id BIGINT) TBLPROPERTIES ('max_rows_per_file' = '3000')")
    val partitions = sparklance.spark.write.ShuffleFreeWrite.MaxTasks + 1
    assert(shuffled(s"INSERT INTO lance.ow.many SELECT id FROM range(0, ${partitions * 13000}, 1, $partitions)"))
    assert(sql("SELECT count(*) FROM lance.ow.many").collect().head.getLong(0) == partitions * 13000L)
    // optimize_write = false: each task's tail stays.
    sql("CREATE TABLE lance.ow.bigplain (id BIGINT) TBLPROPERTIES ('max_rows_per_file' = '3000', 'optimize_write' = 'false')")
    spark.range(0, 39000, 1, 3).writeTo("lance.ow.bigplain").append()
    assert(sql("SELECT count(DISTINCT _fragid) FROM lance.ow.bigplain").collect().head.getLong(0) == 15)
  }

  test("packing rewrites the fewest tail rows that leave ceil(rows / max_rows_per_file) fragments") {
    import sparklance.format.table.TailPacking.plan
    assert(plan(Seq(3000L, 1000L, 3000L, 1000L, 1000L), 3000).sorted == Seq(1, 3, 4))
    assert(plan(Seq(2500L, 2500L), 3000).isEmpty) // two tails need two fragments anyway
    assert(plan(Seq(2500L, 400L, 300L), 3000).sorted == Seq(1, 2)) // the largest stays, the two smallest make one
    val rnd = new scala.util.Random(11)
    for (_ <- 1 to 500) {
      val max = 1L + rnd.nextInt(50)
      val rows = Seq.fill(1 + rnd.nextInt(8))(if (rnd.nextInt(4) == 0) max else 1L + rnd.nextInt(max.toInt))
      def frags(n: Long) = (n + max - 1) / max
      val chosen = plan(rows, max)
      val kept = rows.indices.filterNot(chosen.contains).map(rows)
      assert(chosen.forall(i => rows(i) < max) && chosen.distinct.size == chosen.size)
      assert(kept.size + frags(chosen.map(rows).sum) == frags(rows.sum), (rows, max, chosen))
      // No other choice of tails gets there rewriting fewer rows.
      val tails = rows.indices.filter(i => rows(i) < max)
      for (k <- 0 to tails.size; other <- tails.combinations(k)
           if rows.size - other.size + frags(other.map(rows).sum) == frags(rows.sum))
        assert(other.map(rows).sum >= chosen.map(rows).sum, (rows, max, chosen, other))
    }
  }
}
