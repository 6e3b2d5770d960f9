package sparklance.spark.scan

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.LocalTableScanExec
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random
import sparklance.spark.LocalSpark

class FilteredCountSuite extends AnyFunSuite with LocalSpark {
  private val t = "lance.db.filtered_count"

  /** How a count was planned: from metadata alone, reading some fragments, or reading as before. */
  private sealed trait Planned
  private case object FromIndices extends Planned
  private case object Partly extends Planned
  private case object Scanned extends Planned

  private def planned(df: DataFrame, fragments: Int): Planned = {
    val scans = df.queryExecution.sparkPlan.collect { case b: BatchScanExec => b.scan }
    // Spark's optimizer answers a filter it proves false with an empty relation of its own.
    if (scans.isEmpty) { if (df.queryExecution.executedPlan.isInstanceOf[LocalTableScanExec]) FromIndices else Scanned }
    else if (scans.exists { case s: LanceScan => s.fragmentCount < fragments; case _ => false }) Partly
    else Scanned
  }

  test("a filtered COUNT(*) equals Spark's count of the rows, whether the indices decide all, some or none of the fragments") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    sql(s"""CREATE TABLE $t (id BIGINT, a INT, s STRING, d DOUBLE, day DATE, m DECIMAL(10,2), b BOOLEAN, r INT, c INT)
      TBLPROPERTIES ('max_rows_per_file' = '40', 'optimize_write' = 'false', 'zonemap_columns' = '*')""")
    def rows(from: Int, until: Int) = sql(s"""INSERT INTO $t SELECT /*+ COALESCE(1) */ id,
      CASE WHEN id % 97 = 0 THEN NULL ELSE CAST(id DIV 80 AS INT) END,
      CASE WHEN id % 13 = 0 THEN NULL ELSE concat('k', lpad(CAST(id DIV 40 AS STRING), 3, '0')) END,
      CASE WHEN id % 50 = 0 THEN double('NaN') WHEN id % 31 = 0 THEN NULL ELSE id / 10.0 END,
      date_add(DATE'2026-01-01', CAST(id DIV 100 AS INT)), CAST(id * 1.25 AS DECIMAL(10,2)), id % 2 = 0,
      CAST(pmod(hash(id), 100) AS INT), CAST(pmod(hash(id, 1), 4) AS INT) FROM range($from, $until)""")
    rows(0, 1000)
    // Exact indices on the columns whose zones decide little; rows written later are not in them.
    sql(s"CREATE INDEX r_bt ON $t USING btree (r)")
    sql(s"CREATE INDEX c_bm ON $t USING bitmap (c)")
    sql(s"DELETE FROM $t WHERE id % 11 = 0")
    sql(s"UPDATE $t SET a = a + 1, r = r + 1 WHERE id BETWEEN 300 AND 330")
    rows(1000, 1200)
    val fragments = sql(s"SELECT DISTINCT _fragid FROM $t").count().toInt
    val data = spark.createDataFrame(spark.table(t).collectAsList(), spark.table(t).schema)

    val random = new Random(37)
    def pick[A](xs: A*): A = xs(random.nextInt(xs.size))
    def atom(): String = {
      val n = random.nextInt(1200)
      pick(
        s"id < $n", s"id >= $n", s"id = $n", s"id BETWEEN $n AND ${n + random.nextInt(300)}", s"id IN ($n, ${n + 40}, 7)",
        s"id <> $n", s"a = ${n / 80}", "a IS NULL", "a IS NOT NULL", s"a < ${n / 80}",
        f"s = 'k${n / 40}%03d'", f"s LIKE 'k0${n / 400}%%'", "s IS NULL", f"s > 'k${n / 40}%03d'",
        s"d > ${n / 10.0}", s"d < ${n / 10.0}", "d = double('NaN')", "d IS NOT NULL",
        s"day >= date_add(DATE'2026-01-01', ${n / 100})", s"day = date_add(DATE'2026-01-01', ${n / 100})",
        s"m < ${n * 1.25}", "b", "NOT b", s"r < ${n % 100}", s"r = ${n % 100}", s"r IN (${n % 100}, ${(n + 1) % 100})",
        s"c = ${n % 4}", s"c <> ${n % 4}",
        // Not judged by the indices: the count is Spark's as before.
        "id % 3 = 0")
    }
    def condition(depth: Int): String =
      if (depth == 0 || random.nextInt(3) == 0) atom()
      else pick(s"(${condition(depth - 1)}) AND (${condition(depth - 1)})", s"(${condition(depth - 1)}) OR (${condition(depth - 1)})",
        s"NOT (${condition(depth - 1)})")

    val seen = Seq.fill(40)(condition(2)).map { cond =>
      val df = sql(s"SELECT count(*) FROM $t WHERE $cond")
      val expected = data.where(cond).count()
      assert(df.collect().head.getLong(0) == expected, cond)
      planned(df, fragments)
    }
    val kinds = seen.groupBy(identity).map { case (k, v) => k -> v.size }
    info(s"plans: $kinds")
    assert(kinds.getOrElse(FromIndices, 0) >= 2 && kinds.getOrElse(Partly, 0) >= 10 && kinds.getOrElse(Scanned, 0) >= 3, kinds)

    // DataFrame counts, several counts in one aggregate and the read option that turns skipping off.
    val decided = spark.table(t).where("id < 400 AND s IS NOT NULL")
    assert(decided.count() == data.where("id < 400 AND s IS NOT NULL").count())
    val both = sql(s"SELECT count(*) AS n, count(1) AS m FROM $t WHERE id >= 600")
    assert(both.collect().head.toSeq == Seq.fill(2)(data.where("id >= 600").count()))
    assert(both.schema.fieldNames.toSeq == Seq("n", "m"))
    val unskipped = spark.read.option("data_skipping", "false").table(t).where("id < 400")
    assert(unskipped.count() == data.where("id < 400").count())
    assert(planned(unskipped.groupBy().count(), fragments) == Scanned)

    // Written elsewhere, the count is the same.
    sql("CREATE TABLE lance.db.filtered_counts (n BIGINT)")
    sql(s"INSERT INTO lance.db.filtered_counts SELECT count(*) FROM $t WHERE id < 800 AND r < 50")
    assert(sql("SELECT n FROM lance.db.filtered_counts").collect().head.getLong(0) == data.where("id < 800 AND r < 50").count())
  }
}
