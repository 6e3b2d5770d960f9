package sparklance.spark.scan

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.expressions.{BindReferences, BoundReference, Expression, Literal}
import org.apache.spark.sql.catalyst.optimizer.{ConstantFolding, OptimizeIn}
import org.apache.spark.sql.catalyst.plans.logical.Filter
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random
import scala.util.control.NonFatal
import sparklance.spark.LocalSpark
import sparklance.spark.rowlevel.InListKeySetRule
import RandomConditions.{pick, predicate}

/**
 * Differential test of [[ColumnarCondition]] against Spark's own evaluation of the same condition,
 * row by row: random conditions (arithmetic that overflows, zero divisors, NaN, nulls, IN lists with
 * and without NULL, AND / OR / NOT) over random columns of every compiled type with nulls and edge
 * values, under ANSI mode and without. A row Spark's filter keeps (or raises an error for) must be
 * kept; a row may be kept beyond those only where some part of the condition errs under ANSI mode
 * (overflow, zero divisor): the rows the evaluator leaves to Spark's filter.
 */
class ColumnarConditionSuite extends AnyFunSuite with LocalSpark {
  private val schema = RandomConditions.schema

  private def columns(r: Random, n: Int): Array[ColumnVector] = schema.fields.map { f =>
    val v = new OnHeapColumnVector(n, f.dataType)
    for (i <- 0 until n) {
      if (r.nextInt(7) == 0) v.putNull(i)
      else f.dataType match {
        case LongType => v.putLong(i, pick(r, Long.MaxValue, Long.MinValue, 0L, -1L, 7L, 107L, r.nextInt(1000).toLong, r.nextLong()))
        case IntegerType => v.putInt(i, pick(r, Int.MaxValue, Int.MinValue, 0, -1, 7, r.nextInt(1000), r.nextInt()))
        case ShortType => v.putShort(i, pick(r, Short.MaxValue, Short.MinValue, 0.toShort, 7.toShort, r.nextInt(100).toShort))
        case DoubleType => v.putDouble(i, pick(r, Double.NaN, -0.0, 0.0, 1.5, Double.PositiveInfinity, Double.NegativeInfinity, 7.0, r.nextGaussian() * 100))
        case FloatType => v.putFloat(i, pick(r, Float.NaN, -0.0f, 0.0f, 1.5f, 7.0f, r.nextFloat() * 100))
        case DateType => v.putInt(i, pick(r, 0, 18262, -1, r.nextInt(40000) - 20000))
        case TimestampType => v.putLong(i, pick(r, 0L, 1577836800000000L, -1L, r.nextLong() >> 12))
        case StringType => v.putByteArray(i, pick(r, "", "a", "b", "ab", "é", "x" * 20, r.nextInt(50).toString).getBytes("UTF-8"))
        case BooleanType => v.putBoolean(i, r.nextBoolean())
        case t: DecimalType => v.putLong(i, r.nextInt(100000).toLong)
      }
    }
    v
  }

  /** `text` analyzed on `schema` (some plans folded and their IN lists made sets, as the optimizer does), bound to its columns. */
  private def bound(text: String, optimize: Boolean, keySets: Boolean): Option[Expression] = {
    val df = spark.createDataFrame(java.util.List.of[Row](), schema)
    try {
      val plan = df.where(text).queryExecution.analyzed
      val filter = plan.collectFirst { case f: Filter => f }.get
      val condition = if (optimize) OptimizeIn(ConstantFolding(filter)).asInstanceOf[Filter].condition else filter.condition
      val b = BindReferences.bindReference(condition, df.queryExecution.analyzed.output)
      Some(if (keySets) InListKeySetRule.keyTested(b) else b)
    } catch { case NonFatal(_) => None }
  }

  private def erring(e: Expression, row: org.apache.spark.sql.catalyst.InternalRow): Boolean =
    e.exists {
      case _: BoundReference | _: Literal => false
      case s => try { s.eval(row); false } catch { case NonFatal(_) => true }
    }

  private def differential(seed: Long, conditions: Int): (Int, Int) = {
    val r = new Random(seed)
    var compiled, total = 0
    for (c <- 0 until conditions) {
      val text = predicate(r, 3)
      val optimize = r.nextBoolean()
      val keySets = r.nextBoolean()
      val ansi = r.nextInt(3) > 0
      val exprs = withSQLConf("spark.sql.ansi.enabled" -> ansi.toString)(bound(text, optimize, keySets))
      // The same condition under ANSI mode: where some part of it errs, the evaluator may keep a row Spark drops.
      val ansiTwin = withSQLConf("spark.sql.ansi.enabled" -> "true")(bound(text, optimize, keySets))
      (exprs, ansiTwin) match {
        case (Some(e), Some(twin)) =>
          total += 1
          ColumnarCondition.compile(e).foreach { condition =>
            compiled += 1
            for (round <- 0 until 2) {
              val n = 1 + r.nextInt(300)
              val cols = columns(r, n)
              val batch = new ColumnarBatch(cols, n)
              val keep = condition.keep(cols, n)
              for (i <- 0 until n) {
                val row = batch.getRow(i)
                val spark = try Right(e.eval(row)) catch { case NonFatal(x) => Left(x) }
                val clue = s"condition $text (bound $e, ansi $ansi), row $i: ${schema.fieldNames.indices.map(k => row.get(k, schema(k).dataType)).mkString(", ")}; Spark: $spark"
                spark match {
                  case Right(true) | Left(_) => assert(keep(i), clue)
                  case _ => assert(!keep(i) || erring(twin, row), clue)
                }
              }
            }
          }
        case _ =>
      }
    }
    (compiled, total)
  }

  test("random conditions evaluated by columns keep the rows Spark keeps or errs on, and no others without cause") {
    val (compiled, total) = differential(seed = 37, conditions = 400)
    info(s"$compiled of $total conditions compiled")
    // Most generated shapes compile: the test does not pass by falling back.
    assert(total > 300 && compiled > total / 2, s"$compiled of $total")
  }

  test("the shapes of the spread UPDATE and DELETE, and key sets, compile") {
    for (text <- Seq("l % 100 = 7", "l % 100 = 11", "l IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)", "s = 'a' AND NOT bo",
        "d / 2 > 1.5 OR dt IS NULL", "i + 1 > 0")) {
      val e = bound(text, optimize = true, keySets = true).get
      assert(ColumnarCondition.compile(e).isDefined, s"$text: $e")
    }
    assert(ColumnarCondition.compile(bound("pmod(l, 3) = 1", optimize = true, keySets = false).get).isEmpty)
  }

  test("the remainder by a literal divisor is Java's %") {
    val r = new Random(11)
    for (_ <- 0 until 200000) {
      val d = pick(r, 1L, 2L, 3L, 7L, 100L, 1000003L, Int.MaxValue.toLong, Long.MaxValue, 1L + r.nextInt(Int.MaxValue), 1L + (r.nextLong() >>> 1))
      val x = pick(r, 0L, -1L, Long.MinValue, Long.MaxValue, (1L << 51) - 1, 1L << 51, r.nextLong() >>> 13, r.nextLong() >>> r.nextInt(64), r.nextLong(),
        ((1L << 51) - 1) / d * d, ((1L << 51) - 1) / d * d - 1)
      assert(ColumnarCondition.remainder(x, d, 1.0 / d) == x % d, s"$x % $d")
    }
  }

  test("a row whose arithmetic overflows is kept, not raised, under ANSI mode") {
    val e = withSQLConf("spark.sql.ansi.enabled" -> "true")(bound("l + 1 > 0 AND l % 100 = 8", optimize = true, keySets = false)).get
    val v = new OnHeapColumnVector(3, LongType)
    v.putLong(0, Long.MaxValue); v.putLong(1, 8); v.putLong(2, 7)
    val cols: Array[ColumnVector] = schema.fields.map(f => if (f.name == "l") v else { val c = new OnHeapColumnVector(3, f.dataType); c.putNulls(0, 3); c })
    assert(ColumnarCondition.compile(e).get.keep(cols, 3).take(3).toSeq == Seq(true, true, false))
  }
}
