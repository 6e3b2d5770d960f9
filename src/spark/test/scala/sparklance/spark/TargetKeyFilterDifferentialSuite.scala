package sparklance.spark

import java.sql.{Date, Timestamp}
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.expressions.DynamicPruningExpression
import org.apache.spark.sql.execution.{CommandResultExec, InSubqueryExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite
import scala.util.{Random, Try}
import sparklance.spark.scan.KeySetFilter

/**
 * Random MERGE, DELETE and UPDATE statements whose target rows are narrowed by the source's keys
 * (the target scan keeping only rows whose key the source holds, Spark's exact or Bloom key
 * filters), each run on a table with zone maps and on a copy without indices (as pylance writes
 * tables, where Spark's key filters work) under the default settings, and on a copy without indices
 * with dynamic pruning and runtime Bloom filters off, where nothing narrows the target's rows: the
 * three tables must hold the same rows after every statement, and a statement failing on one (a
 * source row matching several target rows) must fail on the others. Keys hold NULLs and
 * repeat in the target; sources repeat a key now and then; joins are on integer, date,
 * timestamp and string keys, on two keys, and with a further condition; WHEN NOT MATCHED BY
 * SOURCE clauses, which need every target row, come in too.
 */
class TargetKeyFilterDifferentialSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {
  private val schema = StructType(Seq(StructField("k1", IntegerType), StructField("k2", LongType),
    StructField("d", DateType), StructField("ts", TimestampType), StructField("s", StringType), StructField("v", IntegerType)))
  private val keys = Seq("k1", "k2", "d", "ts", "s")

  /** A row of key number `key`: each key column derived from it, or NULL now and then. */
  private def row(r: Random, key: Int): Row = {
    def orNull(v: Any) = if (r.nextInt(10) == 0) null else v
    Row(orNull(key), orNull(key * 7L - 300), orNull(Date.valueOf(java.time.LocalDate.ofEpochDay(key - 100L))),
      orNull(Timestamp.from(java.time.Instant.ofEpochSecond(key * 3607L - 500000L))), orNull(s"s$key"), r.nextInt(100))
  }

  private def rows(name: String): Seq[String] = sql(s"SELECT * FROM $name").collect().map(_.toString).sorted.toSeq

  private def plan(q: String): SparkPlan = sql(q).queryExecution.executedPlan match {
    case c: CommandResultExec => c.commandPhysicalPlan
    case other => other
  }

  private def statement(r: Random): String = {
    def key = keys(r.nextInt(keys.size))
    r.nextInt(8) match {
      case 0 =>
        val k = key
        s"DELETE FROM %s WHERE $k IN (SELECT $k FROM source WHERE v > ${40 + r.nextInt(60)})"
      case 1 =>
        val k = key
        s"UPDATE %s SET v = v + 1000 WHERE $k IN (SELECT $k FROM source)"
      case _ =>
        val on = (if (r.nextInt(6) == 0) "t.k1 = u.k1 AND t.k2 = u.k2" else { val k = key; s"t.$k = u.$k" }) +
          (if (r.nextInt(5) == 0) " AND u.v >= t.v" else "")
        def when(condition: String) = if (r.nextBoolean()) s" AND $condition" else ""
        val matched = r.nextInt(4) match {
          case 0 => ""
          case 1 => s"WHEN MATCHED${when("u.v % 3 = 0")} THEN DELETE"
          case 2 => s"WHEN MATCHED${when("u.v % 3 = 0")} THEN UPDATE SET *"
          case _ => s"WHEN MATCHED${when("u.v % 2 = 0")} THEN UPDATE SET v = t.v + u.v"
        }
        val notMatched = if (r.nextInt(3) == 0) "" else s"WHEN NOT MATCHED${when("u.v > 20")} THEN INSERT *"
        // Rarely: they touch every target row.
        val bySource = r.nextInt(8) match {
          case 0 => s"WHEN NOT MATCHED BY SOURCE${when("t.v < 50")} THEN UPDATE SET v = -1"
          case 1 => s"WHEN NOT MATCHED BY SOURCE${when("t.v < 50")} THEN DELETE"
          case _ => ""
        }
        val clauses = Seq(matched, notMatched, bySource).filter(_.nonEmpty)
        s"MERGE INTO %s t USING source u ON $on ${(if (clauses.isEmpty) Seq("WHEN NOT MATCHED THEN INSERT *") else clauses).mkString(" ")}"
    }
  }

  // Runs of the fast path whose target scan kept only the rows of the source's keys, by
  // whether the table has indices.
  private var keptByScan = Map(true -> 0, false -> 0)

  private def run(seed: Int, statements: Int): Unit = {
    val r = new Random(seed)
    sql("CREATE NAMESPACE IF NOT EXISTS lance.diff")
    val fast = s"lance.diff.fast$seed"
    val slow = s"lance.diff.slow$seed"
    val bare = s"lance.diff.bare$seed"
    sql(s"CREATE TABLE $fast (k1 INT, k2 BIGINT, d DATE, ts TIMESTAMP, s STRING, v INT) " +
      "TBLPROPERTIES ('max_rows_per_file' = '60', 'optimize_write' = 'false')")
    Seq(slow, bare).foreach(name => sql(s"CREATE TABLE $name (k1 INT, k2 BIGINT, d DATE, ts TIMESTAMP, s STRING, v INT) " +
      "TBLPROPERTIES ('max_rows_per_file' = '60', 'optimize_write' = 'false', 'zonemap_columns' = '')"))
    // Keys repeat in the target.
    val initial = spark.createDataFrame(java.util.Arrays.asList(Seq.fill(300)(row(r, r.nextInt(250))): _*), schema)
    initial.coalesce(1).writeTo(fast).append()
    initial.coalesce(1).writeTo(slow).append()
    initial.coalesce(1).writeTo(bare).append()
    (1 to statements).foreach { i =>
      val keysOfSource = r.shuffle((0 until 320).toList).take(r.nextInt(30))
      val repeated = if (keysOfSource.nonEmpty && r.nextInt(5) == 0) Seq(keysOfSource.head) else Nil
      spark.createDataFrame(java.util.Arrays.asList((keysOfSource ++ repeated).map(row(r, _)): _*), schema)
        .createOrReplaceTempView("source")
      val q = statement(r)
      val slowResult = Try(withSQLConf("spark.sql.optimizer.dynamicPartitionPruning.enabled" -> "false",
        "spark.sql.optimizer.runtime.bloomFilter.enabled" -> "false")(sql(q.format(slow)).collect()))
      Seq(fast -> true, bare -> false).foreach { case (name, indexed) =>
        val result = Try(plan(q.format(name)))
        assert(result.isSuccess == slowResult.isSuccess, s"seed $seed statement $i on $name: $q\n$result\nslow: $slowResult")
        result.foreach { p =>
          val integralKeys = collectWithSubqueries(p) { case s: BatchScanExec => s.runtimeFilters }.flatten.collect {
            case DynamicPruningExpression(in: InSubqueryExec) if KeySetFilter.supports(in.child.dataType) => in
          }
          if (integralKeys.nonEmpty) keptByScan += indexed -> (keptByScan(indexed) + 1)
        }
        assert(rows(name) == rows(slow), s"seed $seed statement $i on $name: $q")
      }
    }
  }

  test("a fragment read in several batches keeps exactly the source's keys") {
    // 200,000 rows in one fragment, ascending: the reader tests its key column 65,536 rows at a
    // time, merging the keys in order, and keys sit on both sides of batch bounds.
    sql("CREATE NAMESPACE IF NOT EXISTS lance.diff")
    sql("CREATE TABLE lance.diff.sliced (id BIGINT, v INT) TBLPROPERTIES ('max_rows_per_file' = '1000000', 'optimize_write' = 'false')")
    spark.range(200000).selectExpr("id", "0 AS v").coalesce(1).writeTo("lance.diff.sliced").append()
    val matched = ((0L until 200000L by 1009L) ++ Seq(65535L, 65536L, 131071L, 131072L, 196607L, 196608L, 199999L)).distinct.sorted
    val added = 200000L until 200010L
    import spark.implicits._
    (matched ++ added).toDF("id").createOrReplaceTempView("keys")
    val p = plan("MERGE INTO lance.diff.sliced t USING keys s ON t.id = s.id " +
      "WHEN MATCHED THEN UPDATE SET v = 1 WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 2)")
    assert(collectWithSubqueries(p) { case s: BatchScanExec => s.runtimeFilters }.flatten.exists {
      case DynamicPruningExpression(_: InSubqueryExec) => true
      case _ => false
    }, p)
    def ids(v: Int) = sql(s"SELECT id FROM lance.diff.sliced WHERE v = $v").collect().map(_.getLong(0)).sorted.toSeq
    assert(ids(1) == matched)
    assert(ids(2) == added)
    assert(sql("SELECT count(*) FROM lance.diff.sliced").first().getLong(0) == 200010L)
  }

  test("random statements narrowed by the source's keys change the rows as statements narrowed by nothing do") {
    (1 to 3).foreach(seed => run(seed, 14))
    // The scan's key sets were at work in a good part of the statements on the indexed table.
    assert(keptByScan(true) >= 8, keptByScan)
  }
}
