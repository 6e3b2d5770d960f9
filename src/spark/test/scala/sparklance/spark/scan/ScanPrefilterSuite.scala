package sparklance.spark.scan

import java.sql.{Date, Timestamp}
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.Random
import scala.util.control.NonFatal
import sparklance.spark.LocalSpark
import RandomConditions.pick

/**
 * Queries filtering a table on some of the columns they read evaluate the filter in the scan first
 * and decode the other columns of the rows it keeps only ([[ScanPrefilterStrategy]]). Random
 * conditions, under ANSI mode and without, give the rows (or the error) Spark gives on a Parquet copy
 * of the same rows; the table has several fragments, deleted rows and zone maps.
 */
class ScanPrefilterSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {
  private val schema = StructType(RandomConditions.schema.fields ++ Seq(
    StructField("payload", StringType), StructField("items", ArrayType(IntegerType))))

  private def value(r: Random, t: DataType, row: Int): Any =
    if (r.nextInt(7) == 0) null
    else t match {
      case LongType => pick(r, Long.MaxValue, Long.MinValue, 0L, -1L, 7L, 107L, r.nextInt(1000).toLong, r.nextLong())
      case IntegerType => pick(r, Int.MaxValue, Int.MinValue, 0, -1, 7, r.nextInt(1000), r.nextInt())
      case ShortType => pick(r, Short.MaxValue, Short.MinValue, 0.toShort, 7.toShort, r.nextInt(100).toShort)
      case DoubleType => pick(r, Double.NaN, -0.0, 0.0, 1.5, Double.PositiveInfinity, Double.NegativeInfinity, 7.0, r.nextGaussian() * 100)
      case FloatType => pick(r, Float.NaN, -0.0f, 0.0f, 1.5f, 7.0f, r.nextFloat() * 100)
      case DateType => Date.valueOf(java.time.LocalDate.ofEpochDay(pick(r, 0, 18262, -1, r.nextInt(40000) - 20000).toLong))
      case TimestampType => Timestamp.from(java.time.Instant.ofEpochSecond(pick(r, 0L, 1577836800L, -1L, r.nextInt(Int.MaxValue).toLong)))
      case StringType => pick(r, "", "a", "b", "ab", "é", "x" * 20, r.nextInt(50).toString)
      case BooleanType => r.nextBoolean()
      case _: DecimalType => java.math.BigDecimal.valueOf(r.nextInt(100000).toLong, 2)
      case ArrayType(IntegerType, _) => Seq.fill(r.nextInt(4))(row)
    }

  private def rows(seed: Long, n: Int): Seq[Row] = {
    val r = new Random(seed)
    (0 until n).map { k =>
      Row.fromSeq(schema.fields.toSeq.map {
        case f if f.name == "payload" => s"payload-$k-" + "p" * r.nextInt(30)
        case f => value(r, f.dataType, k)
      })
    }
  }

  /** The same rows in a table of file format `version`, a fifth of them deleted. */
  private def written(name: String, version: String): String = {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.pf")
    val data = spark.createDataFrame(rows(5, 3000).asJava, schema)
    sql(s"CREATE TABLE lance.pf.$name (${schema.toDDL}) TBLPROPERTIES ('max_rows_per_file' = '700', 'data_storage_version' = '$version')")
    data.repartition(3).writeTo(s"lance.pf.$name").append()
    sql(s"DELETE FROM lance.pf.$name WHERE i % 5 = 1")
    s"lance.pf.$name"
  }

  private lazy val table: String = {
    val t = written("t", "2.2")
    spark.table(t).write.parquet(warehouse.resolve("pf.parquet").toString)
    spark.read.parquet(warehouse.resolve("pf.parquet").toString).createOrReplaceTempView("pf_parquet")
    t
  }

  /** The same rows in file format 2.0, whose reader picks rows out of the parts of pages stored plainly. */
  private lazy val table20: String = { table; written("t20", "2.0") }

  /** The conditions the table's scans evaluate first, as their descriptions (EXPLAIN) show them. */
  private def conditions(df: DataFrame): Seq[String] =
    collect(df.queryExecution.executedPlan) { case s: BatchScanExec => s.scan }.collect {
      case s: LanceScan if s.condition.isDefined => s.description().split(" reading other columns where ").last
    }

  private def result(df: => DataFrame): Either[String, Seq[String]] =
    try Right(df.collect().map(_.toString).sorted.toSeq) catch { case NonFatal(e) => Left(e.getClass.getSimpleName) }

  test("random filters give Spark's rows on Parquet, and are evaluated by the scan first") {
    val r = new Random(41)
    var prefiltered, errors = 0
    val statements = 120
    for (k <- 0 until statements) {
      val condition = RandomConditions.predicate(r, 3)
      val columns = pick(r, "l, payload", "payload, items", "*", "s, d, items, payload")
      val ansi = r.nextInt(3) > 0
      withSQLConf("spark.sql.ansi.enabled" -> ansi.toString) {
        val lance = spark.table(if (k % 2 == 0) table else table20).where(condition).selectExpr(columns.split(", ").toSeq: _*)
        val expected = result(spark.table("pf_parquet").where(condition).selectExpr(columns.split(", ").toSeq: _*))
        val got = result(lance)
        assert(got.isLeft == expected.isLeft && (got.isLeft || got == expected),
          s"statement $k (${if (k % 2 == 0) "2.2" else "2.0"}): SELECT $columns WHERE $condition (ansi $ansi): got $got, expected $expected")
        if (got.isLeft) errors += 1
        else if (conditions(lance).nonEmpty) prefiltered += 1
      }
    }
    info(s"$prefiltered of $statements filters evaluated by the scan first, $errors raised errors on both")
    // Most of them took the new path: the test does not pass by planning around it.
    assert(prefiltered > statements / 2, s"$prefiltered of $statements")
  }

  test("the scan evaluates the conjuncts it can, and only where the query reads other columns") {
    val t = table
    def planned(q: String): Seq[String] = { val df = sql(q); df.collect(); conditions(df) }
    val both = planned(s"SELECT payload FROM $t WHERE l % 100 = 7 AND s = 'a'")
    assert(both.size == 1 && both.head.contains("((l % 100L) = 7L)") && both.head.contains("(s = 'a')"), both)
    // Other columns of a few numbers cost less to decode for every row than the condition's twice.
    assert(planned(s"SELECT d, f FROM $t WHERE l % 100 = 7").isEmpty)
    assert(planned(s"SELECT d, f, l, ts, dt FROM $t WHERE i % 100 = 7").nonEmpty)
    // Reading only the condition's columns, nothing is spared.
    assert(planned(s"SELECT l, s FROM $t WHERE l % 100 = 7 AND s = 'a'").isEmpty)
    assert(planned(s"SELECT count(*) FROM $t WHERE l % 100 = 7").isEmpty)
    // A subquery and a nested column are left to Spark's filter.
    assert(planned(s"SELECT payload FROM $t WHERE i IN (SELECT i FROM $t WHERE l = 7) AND size(items) > 1 AND d > 0")
      .exists(c => c.contains("(d > 0.0D)") && !c.contains("items")))
    // Under aliases of a projection, the condition is on the table's columns.
    assert(planned(s"SELECT p FROM (SELECT payload AS p, l % 10 AS m FROM $t) WHERE m = 3").exists(_.contains("((l % 10L) = 3L)")))
    // A 2.0 table's too: its reader picks the rows kept out of the parts of their pages.
    assert(planned(s"SELECT payload FROM $table20 WHERE l % 100 = 7").exists(_.contains("((l % 100L) = 7L)")))
    // A condition on a metadata column is left to Spark's filter.
    assert(planned(s"SELECT payload FROM $t WHERE _rowaddr > 0").isEmpty)
  }

  test("the other columns of rows the filter drops are not read") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.pf")
    sql("CREATE TABLE lance.pf.wide (id BIGINT, body STRING) TBLPROPERTIES ('max_rows_per_file' = '20000')")
    // Incompressible bodies of 200 bytes: what reading them costs shows in the bytes read.
    spark.range(40000).selectExpr("id * 7919 % 40000 AS id", "sha2(CAST(id AS STRING), 512) || sha2(CAST(-id AS STRING), 256) AS body")
      .writeTo("lance.pf.wide").append()
    def bytesRead(df: DataFrame): Long = {
      df.collect()
      collect(df.queryExecution.executedPlan) { case s: BatchScanExec => s.metrics(ScanMetrics.DataBytesRead).value }.sum
    }
    val whole = bytesRead(sql("SELECT id, body FROM lance.pf.wide"))
    val one = sql("SELECT body FROM lance.pf.wide WHERE id % 10000 = 17")
    assert(one.count() == 4)
    val filtered = bytesRead(one)
    // The bodies alone are 7.68 MB.
    assert(whole > 7680000 && filtered < whole / 5, s"$filtered bytes read of $whole")
  }
}
