package sparklance.spark.scan

import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.memory.{BufferAllocator, RootAllocator}
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, ListVector}
import org.apache.arrow.vector.types.FloatingPointPrecision
import org.apache.arrow.vector.types.pojo.{ArrowType, FieldType}
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnVector, ColumnarBatch}
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * Columns read in place from Arrow memory ([[ArrowColumns]]) against Spark's own
 * ArrowColumnVector over the same vectors: random values of every type they cover, random nulls
 * (none, some, all) at every level, empty and multi-byte strings, long and BigDecimal-only
 * decimals, NaN and -0.0, empty and null lists, null items in lists and vectors, lists of lists.
 */
class ArrowColumnsSuite extends AnyFunSuite {
  /** Every value of column `c` (of type `t`) through Spark's getters, nulls as null. */
  private def values(c: ColumnVector, t: DataType, n: Int): Seq[Any] = {
    val batch = new ColumnarBatch(Array(c), n)
    (0 until n).map(i => value(batch.getRow(i), 0, t))
  }

  private def value(g: SpecializedGetters, o: Int, t: DataType): Any = if (g.isNullAt(o)) null else t match {
    case BooleanType => g.getBoolean(o)
    case ByteType => g.getByte(o)
    case ShortType => g.getShort(o)
    case IntegerType | DateType => g.getInt(o)
    case LongType | TimestampType | TimestampNTZType => g.getLong(o)
    case FloatType => java.lang.Float.floatToRawIntBits(g.getFloat(o))
    case DoubleType => java.lang.Double.doubleToRawLongBits(g.getDouble(o))
    case d: DecimalType => g.getDecimal(o, d.precision, d.scale)
    case _: StringType => g.getUTF8String(o).toString
    case BinaryType => g.getBinary(o).toSeq
    case ArrayType(e, _) => val a = g.getArray(o); (0 until a.numElements).map(k => value(a, k, e))
  }

  private val rnd = new Random(37)

  /** A random null rate: none, all, or some. */
  private def nullRate(): Double = rnd.nextInt(4) match { case 0 => 0.0; case 1 => 1.0; case _ => rnd.nextDouble() }

  private def fill[V <: FieldVector](v: V, n: Int, rate: Double)(set: (V, Int) => Unit): V = {
    v.setInitialCapacity(n)
    v.allocateNew()
    (0 until n).foreach { i =>
      if (rnd.nextDouble() < rate) (v: FieldVector) match {
        case f: BaseFixedWidthVector => f.setNull(i)
        case b: BaseVariableWidthVector => b.setNull(i)
        case b: BaseLargeVariableWidthVector => b.setNull(i)
        case other => fail(s"no nulls for $other")
      } else set(v, i)
    }
    v.setValueCount(n)
    v
  }

  private def string(): String = {
    val pieces = Seq("a", "é", "日本", "🙂", "x" * rnd.nextInt(40), "")
    (0 until rnd.nextInt(6)).map(_ => pieces(rnd.nextInt(pieces.size))).mkString
  }

  /** A random value of `t`: one whose unscaled value fits a long, or (if `t` allows) one that does not. */
  private def decimal(t: DecimalType): java.math.BigDecimal = {
    val digits = if (rnd.nextBoolean()) math.min(t.precision, 18) else t.precision
    val unscaled = new java.math.BigInteger(digits * 4, rnd.self).mod(java.math.BigInteger.TEN.pow(digits))
    new java.math.BigDecimal(if (rnd.nextBoolean()) unscaled else unscaled.negate, t.scale)
  }

  /** A random leaf vector of `t`, the Arrow class Lance decodes it to. */
  private def leaf(t: DataType, n: Int, a: BufferAllocator, large: Boolean = false): FieldVector = {
    val rate = nullRate()
    t match {
      case BooleanType => fill(new BitVector("v", a), n, rate)((v, i) => v.set(i, rnd.nextInt(2)))
      case ByteType => fill(new TinyIntVector("v", a), n, rate)((v, i) => v.set(i, rnd.nextInt().toByte))
      case ShortType => fill(new SmallIntVector("v", a), n, rate)((v, i) => v.set(i, rnd.nextInt().toShort))
      case IntegerType => fill(new IntVector("v", a), n, rate)((v, i) => v.set(i, rnd.nextInt()))
      case DateType => fill(new DateDayVector("v", a), n, rate)((v, i) => v.set(i, rnd.nextInt(100000)))
      case LongType => fill(new BigIntVector("v", a), n, rate)((v, i) => v.set(i, rnd.nextLong()))
      case TimestampType => fill(new TimeStampMicroTZVector("v", a, "UTC"), n, rate)((v, i) => v.set(i, rnd.nextLong()))
      case TimestampNTZType => fill(new TimeStampMicroVector("v", a), n, rate)((v, i) => v.set(i, rnd.nextLong()))
      case FloatType =>
        val specials = Array(Float.NaN, -0.0f, Float.PositiveInfinity, Float.MinValue)
        fill(new Float4Vector("v", a), n, rate)((v, i) => v.set(i, if (rnd.nextInt(8) == 0) specials(rnd.nextInt(4)) else rnd.nextFloat()))
      case DoubleType => fill(new Float8Vector("v", a), n, rate)((v, i) => v.set(i, if (rnd.nextInt(8) == 0) Double.NaN else rnd.nextGaussian()))
      case d: DecimalType => fill(new DecimalVector("v", a, d.precision, d.scale), n, rate)((v, i) => v.set(i, decimal(d)))
      case _: StringType if large => fill(new LargeVarCharVector("v", a), n, rate)((v, i) => v.setSafe(i, string().getBytes(UTF_8)))
      case _: StringType => fill(new VarCharVector("v", a), n, rate)((v, i) => v.setSafe(i, string().getBytes(UTF_8)))
      case BinaryType if large => fill(new LargeVarBinaryVector("v", a), n, rate)((v, i) => v.setSafe(i, rnd.nextBytes(rnd.nextInt(30))))
      case BinaryType => fill(new VarBinaryVector("v", a), n, rate)((v, i) => v.setSafe(i, rnd.nextBytes(rnd.nextInt(30))))
    }
  }

  /** A random list vector (`kind` "list", "large" or "fixed") of `n` lists of `element`. */
  private def list(kind: String, element: DataType, n: Int, a: BufferAllocator): FieldVector = {
    val rate = nullRate()
    val nulls = Array.fill(n)(rnd.nextDouble() < rate)
    kind match {
      case "fixed" =>
        val dim = 1 + rnd.nextInt(5)
        val v = new FixedSizeListVector("v", a, FieldType.nullable(new ArrowType.FixedSizeList(dim)), null)
        val items = leaf(element, n * dim, a)
        v.initializeChildrenFromFields(java.util.List.of(items.getField))
        v.setInitialCapacity(n)
        v.allocateNew()
        items.makeTransferPair(v.getDataVector).transfer()
        items.close()
        (0 until n).foreach(i => if (nulls(i)) v.setNull(i) else v.setNotNull(i))
        v.setValueCount(n)
        v.getDataVector.setValueCount(n * dim)
        v
      case _ =>
        val lengths = Array.tabulate(n)(i => if (nulls(i)) 0 else rnd.nextInt(5))
        val items = element match {
          case ArrayType(e, _) => list("list", e, lengths.sum, a)
          case e => leaf(e, lengths.sum, a, large = rnd.nextBoolean())
        }
        val v: FieldVector = if (kind == "large") LargeListVector.empty("v", a) else ListVector.empty("v", a)
        v.initializeChildrenFromFields(java.util.List.of(items.getField))
        val child = v match { case l: ListVector => l.getDataVector; case l: LargeListVector => l.getDataVector }
        v.setInitialCapacity(n)
        v.allocateNew()
        items.makeTransferPair(child).transfer()
        items.close()
        var at = 0
        (0 until n).foreach { i =>
          v match {
            case l: ListVector => if (nulls(i)) l.setNull(i) else { l.startNewValue(i); l.endValue(i, lengths(i)) }
            case l: LargeListVector => if (nulls(i)) l.setNull(i) else { l.startNewValue(i); l.endValue(i, lengths(i)) }
          }
          at += lengths(i)
        }
        v.setValueCount(n)
        child.setValueCount(at)
        v
    }
  }

  private def same(v: FieldVector, t: DataType): Unit = {
    val n = v.getValueCount
    val fast = ArrowColumns.of(v, t).getOrElse(fail(s"${v.getClass.getSimpleName} as $t is not read in place"))
    val slow = new ArrowColumnVector(v)
    val expected = values(slow, t, n)
    assert(values(fast, t, n) == expected, s"${v.getClass.getSimpleName} as $t")
    assert(fast.hasNull == slow.hasNull && fast.numNulls == slow.numNulls, s"nulls of ${v.getClass.getSimpleName} as $t")
  }

  private val leafTypes = Seq(BooleanType, ByteType, ShortType, IntegerType, DateType, LongType, TimestampType,
    TimestampNTZType, FloatType, DoubleType, DecimalType(23, 2), DecimalType(38, 10), DecimalType(5, 0), StringType, BinaryType)

  test("every leaf type reads in place as Spark's ArrowColumnVector reads it") {
    val a = new RootAllocator()
    try for (_ <- 0 until 8; t <- leafTypes; large <- Seq(false, true)) {
      val n = rnd.nextInt(3000)
      val v = leaf(t, n, a, large)
      try same(v, t) finally v.close()
    } finally a.close()
  }

  test("lists, large lists, fixed-size lists and lists of lists read in place as Spark's ArrowColumnVector reads them") {
    val a = new RootAllocator()
    try for (_ <- 0 until 6; kind <- Seq("list", "large", "fixed"); e <- leafTypes ++ Seq(ArrayType(LongType), ArrayType(StringType))
             if kind != "fixed" || !e.isInstanceOf[ArrayType]) {
      val n = rnd.nextInt(1500)
      val v = list(kind, e, n, a)
      val t = ArrayType(e)
      val got = try values(ArrowColumns.of(v, t).get, t, n) catch { case x: Throwable => v.close(); throw x }
      // Spark's ArrowColumnVector reads only ListVector: the others it sees converted, as scans did
      // before (which moves their items: read in place first).
      val asList = if (v.isInstanceOf[ListVector]) v else SparkVectors.adapt(v, t, a)
      try assert(got == values(new ArrowColumnVector(asList), t, n), s"${v.getClass.getSimpleName} of $e")
      finally { if (asList ne v) asList.close(); v.close() }
    } finally a.close()
  }

  test("vectors Spark's values are not (unsigned, other units, JSONB) are left to conversion") {
    val a = new RootAllocator()
    try {
      val vectors = Seq[(FieldVector, DataType)](new UInt4Vector("u", a) -> LongType, new TimeStampMicroVector("t", a) -> TimestampType,
        new LargeVarBinaryVector("j", a) -> StringType, new Float4Vector("f", a) -> DoubleType, new IntVector("i", a) -> LongType)
      vectors.foreach { case (v, t) => try assert(ArrowColumns.of(v, t).isEmpty, s"$v as $t") finally v.close() }
    } finally a.close()
  }
}
