package sparklance.spark

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.{CommandResultExec, FilterExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random
import sparklance.spark.rowlevel.SourceKeysContain

/**
 * Filters by long IN lists of integers, tested against a primitive key set
 * ([[rowlevel.InListKeySetRule]]), keep the rows Spark's own `InSet` keeps: random lists (with
 * nulls, zero, extremes, values absent from the table) against random columns (with nulls),
 * compared with the answer computed here, in queries and in DELETE.
 */
class InListKeySetSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {
  private val random = new Random(37)
  private val extremes = Seq(0L, -1L, 1L, Long.MinValue, Long.MaxValue, Int.MinValue.toLong, Int.MaxValue.toLong)

  /** A table `lance.inlist.<name>` of (k BIGINT, i INT) rows, some null, over several fragments. */
  private def table(name: String, rows: Seq[(Option[Long], Option[Int])]): String = {
    val t = s"lance.inlist.$name"
    sql("CREATE NAMESPACE IF NOT EXISTS lance.inlist")
    sql(s"CREATE TABLE $t (k BIGINT, i INT) TBLPROPERTIES ('max_rows_per_file' = '700', 'optimize_write' = 'false')")
    import spark.implicits._
    rows.toDF("k", "i").repartition(3).writeTo(t).append()
    t
  }

  private def randomRows(n: Int): Seq[(Option[Long], Option[Int])] = Seq.fill(n) {
    val k = if (random.nextInt(20) == 0) None else Some(if (random.nextInt(10) == 0) extremes(random.nextInt(extremes.size)) else random.nextLong(4000) - 2000)
    val i = if (random.nextInt(20) == 0) None else Some(random.nextInt(4000) - 2000)
    (k, i)
  }

  private def literals(values: Seq[Option[Long]]): String = values.map(_.fold("NULL")(_.toString)).mkString(", ")

  private def keyTested(df: DataFrame): Boolean = keyTested(df.queryExecution.executedPlan)
  private def keyTested(plan: SparkPlan): Boolean =
    collect(plan) { case f: FilterExec => f }.exists(_.condition.exists(_.isInstanceOf[SourceKeysContain]))

  test("queries by long IN lists keep the rows InSet keeps, and NOT IN is left to Spark") {
    val rows = randomRows(3000)
    val t = table("q", rows)
    for (round <- 0 until 12) {
      val size = 20 + random.nextInt(1500)
      val list = Seq.fill(size)(if (random.nextInt(10) == 0) extremes(random.nextInt(extremes.size)) else random.nextLong(6000) - 3000).map(Some(_)) ++
        (if (round % 2 == 0) Seq(None) else Nil)
      val set = list.flatten.toSet
      val in = sql(s"SELECT k FROM $t WHERE k IN (${literals(list)}) AND k IS DISTINCT FROM 7")
      assert(keyTested(in), s"round $round: the filter does not test a key set")
      assert(in.collect().map(_.getLong(0)).sorted.toSeq == rows.flatMap(_._1).filter(k => set(k) && k != 7).sorted, s"round $round")
      // Under NOT a list holding null keeps no row, and a null value none either: Spark's answer.
      val notIn = sql(s"SELECT k FROM $t WHERE NOT (k IN (${literals(list)}))")
      assert(!keyTested(notIn))
      val expected = if (list.contains(None)) Nil else rows.flatMap(_._1).filterNot(set).sorted
      assert(notIn.collect().map(_.getLong(0)).sorted.toSeq == expected, s"round $round NOT IN")
    }
  }

  test("INT lists above Spark's switch threshold test a key set, shorter ones stay InSet; both keep the same rows") {
    val rows = randomRows(2000)
    val t = table("ints", rows)
    val threshold = spark.conf.get("spark.sql.optimizer.inSetSwitchThreshold").toInt
    for (size <- Seq(50, threshold, threshold + 1, 2500)) {
      val list = Seq.fill(size)(random.nextInt(5000) - 2500)
      val df = sql(s"SELECT i FROM $t WHERE i IN (${list.mkString(", ")})")
      assert(keyTested(df) == (list.distinct.size > threshold), s"size $size")
      assert(df.collect().map(_.getInt(0)).sorted.toSeq == rows.flatMap(_._2).filter(list.toSet).sorted, s"size $size")
    }
  }

  test("DELETE by a long IN list deletes the rows InSet matches") {
    for (round <- 0 until 3) {
      val rows = randomRows(2500)
      val t = table(s"d$round", rows)
      val list = Seq.fill(500 + random.nextInt(2000))(random.nextLong(5000) - 2500).map(Some(_)) ++ (if (round == 1) Seq(None) else Nil)
      val set = list.flatten.toSet
      val delete = s"DELETE FROM $t WHERE k IN (${literals(list)})"
      val plan = sql(delete).queryExecution.executedPlan match {
        case c: CommandResultExec => c.commandPhysicalPlan
        case other => other
      }
      assert(keyTested(plan), s"round $round:\n$plan")
      val left = sql(s"SELECT k, i FROM $t").collect().map(r => (Option(r.get(0)).map(_.asInstanceOf[Long]), Option(r.get(1)).map(_.asInstanceOf[Int])))
      val expected = rows.filterNot(_._1.exists(set))
      assert(left.toSeq.sortBy(_.toString) == expected.sortBy(_.toString), s"round $round")
    }
  }
}
