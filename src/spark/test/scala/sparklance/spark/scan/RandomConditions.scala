package sparklance.spark.scan

import org.apache.spark.sql.types._
import scala.util.Random

/**
 * Random SQL conditions over the columns l BIGINT, i INT, sh SMALLINT, d DOUBLE, f FLOAT, dt DATE,
 * ts TIMESTAMP, s STRING, bo BOOLEAN and dec DECIMAL(10, 2): arithmetic that may overflow or divide
 * by zero, NaN, NULL literals, IN lists with and without NULL, AND / OR / NOT, and a function the
 * columnar evaluator does not compile (`pmod`).
 */
object RandomConditions {
  /** The columns the conditions read. */
  val schema: StructType = StructType(Seq(
    StructField("l", LongType), StructField("i", IntegerType), StructField("sh", ShortType), StructField("d", DoubleType),
    StructField("f", FloatType), StructField("dt", DateType), StructField("ts", TimestampType), StructField("s", StringType),
    StructField("bo", BooleanType), StructField("dec", DecimalType(10, 2))))

  def pick[T](r: Random, xs: T*): T = xs(r.nextInt(xs.size))

  private def integer(r: Random, depth: Int): String =
    if (depth == 0 || r.nextInt(3) == 0) pick(r, "l", "i", "sh", "7", "0", "-1", "100", "2147483647", "9223372036854775807",
      "CAST(i AS BIGINT)", "CAST(NULL AS INT)")
    else pick(r, "+", "-", "*", "%", "neg", "pmod") match {
      case "neg" => s"-(${integer(r, depth - 1)})"
      // Not compiled: the condition falls back whole.
      case "pmod" => s"pmod(${integer(r, depth - 1)}, 3)"
      case op => s"(${integer(r, depth - 1)} $op ${integer(r, depth - 1)})"
    }

  private def fractional(r: Random, depth: Int): String =
    if (depth == 0 || r.nextInt(3) == 0) pick(r, "d", "f", "1.5D", "0.0D", "-0.0D", "double('NaN')", "CAST(i AS DOUBLE)", "CAST(f AS DOUBLE)")
    else pick(r, "+", "-", "*", "/", "%", "neg") match {
      case "neg" => s"-(${fractional(r, depth - 1)})"
      case op => s"(${fractional(r, depth - 1)} $op ${fractional(r, depth - 1)})"
    }

  private def cmp(r: Random) = pick(r, "=", "<", "<=", ">", ">=", "<=>", "!=")

  private def intList(r: Random): String = {
    val items = Seq.fill(1 + r.nextInt(if (r.nextBoolean()) 4 else 30))(pick(r, "7", "0", "-1", r.nextInt(1000).toString, "2147483647")) ++
      (if (r.nextInt(3) == 0) Seq("NULL") else Nil)
    r.shuffle(items).mkString(", ")
  }

  def predicate(r: Random, depth: Int): String =
    if (depth == 0 || r.nextInt(3) == 0) r.nextInt(12) match {
      case 0 | 1 => s"${integer(r, 2)} ${cmp(r)} ${integer(r, 2)}"
      case 2 => s"${fractional(r, 2)} ${cmp(r)} ${fractional(r, 2)}"
      case 3 => s"s ${cmp(r)} ${pick(r, "'a'", "''", "'ab'", "s", "CAST(NULL AS STRING)")}"
      case 4 => s"${pick(r, "l", "i", "l % 100", "sh")} ${pick(r, "IN", "NOT IN")} (${intList(r)})"
      case 5 => s"s IN (${Seq.fill(1 + r.nextInt(15))(pick(r, "'a'", "'b'", "''", "'é'", s"'${r.nextInt(50)}'")).mkString(", ")}${if (r.nextBoolean()) ", NULL" else ""})"
      case 6 => s"${pick(r, "l", "i", "d", "s", "bo", "dec", "(l + i)", "(d / f)")} ${pick(r, "IS NULL", "IS NOT NULL")}"
      case 7 => s"dt ${cmp(r)} ${pick(r, "DATE'2020-01-01'", "DATE'1970-01-01'", "dt")}"
      case 8 => s"ts ${cmp(r)} ${pick(r, "TIMESTAMP'2020-01-01 00:00:00'", "ts")}"
      case 9 => pick(r, "bo", "NOT bo", "true", "CAST(NULL AS BOOLEAN)")
      case 10 => s"dec > 5.00"
      case _ => s"l % 100 = ${r.nextInt(100)}"
    }
    else pick(r, "AND", "OR", "NOT") match {
      case "NOT" => s"NOT (${predicate(r, depth - 1)})"
      case op => s"(${predicate(r, depth - 1)}) $op (${predicate(r, depth - 1)})"
    }
}
