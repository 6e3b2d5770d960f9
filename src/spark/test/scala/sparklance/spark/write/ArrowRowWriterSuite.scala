package sparklance.spark.write

import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.ListVector
import org.apache.arrow.vector.types.FloatingPointPrecision
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import scala.util.{Random, Using}
import sparklance.format.table.LanceSchema

/**
 * The values ArrowRowWriter puts into its vectors are exactly the rows' values, batch after batch,
 * whatever holds the rows: text copied straight from the row's memory into the data buffer (on the
 * heap in an UnsafeRow or a UTF8String of its own, off the heap), integers and decimals of the
 * column's scale read without a per-value conversion (decimals of another scale re-scaled), NULLs
 * between values, values long enough to make the data buffer grow.
 */
class ArrowRowWriterSuite extends AnyFunSuite {
  private def field(name: String, t: ArrowType, kids: Field*) = new Field(name, FieldType.nullable(t), kids.asJava)
  private val schema = LanceSchema.fromArrow(new Schema(List(
    field("b", new ArrowType.Int(8, true)), field("h", new ArrowType.Int(16, true)), field("i", new ArrowType.Int(32, true)),
    field("k", new ArrowType.Int(64, true)), field("s", ArrowType.Utf8.INSTANCE), field("ls", ArrowType.LargeUtf8.INSTANCE),
    field("tags", ArrowType.List.INSTANCE, field("item", ArrowType.Utf8.INSTANCE)),
    field("dec", new ArrowType.Decimal(10, 2, 128)), field("wide_dec", new ArrowType.Decimal(38, 4, 128)),
    field("decs", ArrowType.List.INSTANCE, field("item", new ArrowType.Decimal(38, 4, 128))),
    field("rescaled", new ArrowType.Decimal(12, 3, 128))).asJava))
  // The last column's values are of another scale than the table's (re-scaled as they are written).
  private val sparkTypes = Seq(ByteType, ShortType, IntegerType, LongType, StringType, StringType, ArrayType(StringType),
    DecimalType(10, 2), DecimalType(38, 4), ArrayType(DecimalType(38, 4)), DecimalType(9, 1))

  private val pieces = Seq("a", "é", "日本語", "🙂", "", "x" * 300)

  /** A random text: empty, short multibyte, or long (up to 200 KB, past the data buffer's first size). */
  private def text(r: Random): String = r.nextInt(20) match {
    case 0 => ""
    case 1 => "長い値" * (1 + r.nextInt(70000))
    case _ => Seq.fill(1 + r.nextInt(8))(pieces(r.nextInt(pieces.size))).mkString
  }

  private def maybe[T](r: Random)(value: => T): Any = if (r.nextInt(6) == 0) null else value

  /** A decimal of up to 38 digits, of either sign, whose two's complement takes 1 to 16 bytes. */
  private def wide(r: Random): java.math.BigDecimal = {
    val unscaled = new java.math.BigInteger(1 + r.nextInt(125), r.self)
    new java.math.BigDecimal(if (r.nextBoolean()) unscaled.negate() else unscaled, 4)
  }

  private def randomRow(r: Random): Seq[Any] = Seq(
    maybe(r)(r.nextInt().toByte), maybe(r)(r.nextInt().toShort), maybe(r)(r.nextInt()), maybe(r)(r.nextLong()),
    maybe(r)(text(r)), maybe(r)(text(r)), maybe(r)(Seq.fill(r.nextInt(4))(if (r.nextInt(5) == 0) null else text(r))),
    maybe(r)(java.math.BigDecimal.valueOf(r.nextLong() % 10000000000L, 2)), maybe(r)(wide(r)),
    maybe(r)(Seq.fill(r.nextInt(4))(if (r.nextInt(5) == 0) null else wide(r))),
    maybe(r)(java.math.BigDecimal.valueOf(r.nextInt(1000000000) - 500000000L, 1)))

  private def utf8(s: String) = if (s == null) null else UTF8String.fromString(s)

  private def internal(values: Seq[Any]): GenericInternalRow = new GenericInternalRow(values.map {
    case s: String => utf8(s)
    case xs: Seq[_] => new GenericArrayData(xs.map {
      case s: String => utf8(s); case d: java.math.BigDecimal => Decimal(d); case null => null
    }.toArray[Any])
    case d: java.math.BigDecimal => Decimal(d)
    case v => v
  }.toArray)

  /** The same text in memory off the heap (freed by the caller): a UTF8String with no base object. */
  private def offHeap(s: String, owned: ArrayBuffer[Long]): UTF8String = {
    val bytes = s.getBytes(UTF_8)
    val address = Platform.allocateMemory(math.max(bytes.length, 1).toLong)
    owned += address
    Platform.copyMemory(bytes, Platform.BYTE_ARRAY_OFFSET, null, address, bytes.length.toLong)
    UTF8String.fromAddress(null, address, bytes.length)
  }

  private def values(v: FieldVector): Seq[Any] = (0 until v.getValueCount).map { i =>
    if (v.isNull(i)) null
    else v match {
      case x: VarCharVector => new String(x.get(i), UTF_8)
      case x: LargeVarCharVector => new String(x.get(i), UTF_8)
      case x: ListVector => x.getObject(i).asScala.map(t => if (t == null) null else t.toString).toSeq
      case x => x.getObject(i) match { case n: java.lang.Number => n; case o => o }
    }
  }

  private def expected(rows: Seq[Seq[Any]], column: Int): Seq[Any] = rows.map(_(column) match {
    case xs: Seq[_] => xs.map(x => if (x == null) null else x.toString)
    case d: java.math.BigDecimal if column == schema.fields.size - 1 => d.setScale(3)
    case x => x
  })

  for (holder <- Seq("UnsafeRow", "GenericInternalRow on the heap", "GenericInternalRow off the heap")) {
    test(s"text, integers, decimals, NULLs and lists from a $holder come out as they went in, over batches") {
      val random = new Random(holder.hashCode)
      val project = UnsafeProjection.create(StructType(sparkTypes.zipWithIndex.map { case (t, i) => StructField(s"c$i", t) }))
      val owned = ArrayBuffer.empty[Long]
      try Using.resource(new RootAllocator()) { allocator =>
        Using.resource(new ArrowRowWriter("t", schema.fields, sparkTypes, allocator)) { writer =>
          for (batch <- 0 until 4) {
            val rows = Seq.fill(if (batch == 0) 1 else 50 + random.nextInt(400))(randomRow(random))
            rows.foreach { values =>
              val row: InternalRow = holder match {
                case "UnsafeRow" => project(internal(values)).copy()
                case "GenericInternalRow on the heap" => internal(values)
                case _ =>
                  val r = internal(values)
                  Seq(4, 5).foreach(c => if (values(c) != null) r.update(c, offHeap(values(c).asInstanceOf[String], owned)))
                  r
              }
              writer.append(row)
            }
            val vectors = writer.seal()
            assert(vectors.head.getValueCount == rows.size)
            vectors.zipWithIndex.foreach { case (v, c) =>
              val want = expected(rows, c).map {
                case n: java.lang.Byte => n.intValue; case n: java.lang.Short => n.intValue; case x => x
              }
              val got = values(v).map {
                case n: java.lang.Byte => n.intValue; case n: java.lang.Short => n.intValue; case x => x
              }
              assert(got == want, s"column ${schema.fields(c).name}, batch $batch")
            }
            // The bytes the writer counts to cut batches by size: a fixed-width value's width, a text's bytes and 4.
            def textBytes(x: Any): Long = x match { case s: String => s.getBytes(UTF_8).length + 4L; case _ => 0L }
            def decimalBytes(x: Any): Long = x match { case _: java.math.BigDecimal => 16L; case _ => 0L }
            val bytes = rows.map { r =>
              Seq(1, 2, 4, 8).zip(r).map { case (w, x) => if (x == null) 0L else w.toLong }.sum + textBytes(r(4)) + textBytes(r(5)) +
                (r(6) match { case xs: Seq[_] => xs.map(textBytes).sum; case _ => 0L }) +
                decimalBytes(r(7)) + decimalBytes(r(8)) + decimalBytes(r(10)) +
                (r(9) match { case xs: Seq[_] => xs.map(decimalBytes).sum; case _ => 0L })
            }.sum
            assert(writer.bufferedBytes == bytes)
            writer.reset()
          }
        }
      } finally owned.foreach(Platform.freeMemory)
    }
  }

  // Arrays of numbers: Spark's own arrays (an UnsafeRow's) without NULLs are copied into the item
  // vector at once, the others item by item; both must give the same vectors.
  private val arraySchema = LanceSchema.fromArrow(new Schema(List(
    field("vec", new ArrowType.FixedSizeList(3), field("item", new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE))),
    field("longs", ArrowType.List.INSTANCE, field("item", new ArrowType.Int(64, true))),
    field("doubles", ArrowType.LargeList.INSTANCE, field("item", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE))),
    field("bytes", ArrowType.List.INSTANCE, field("item", new ArrowType.Int(8, true)))).asJava))
  private val arrayTypes = Seq(ArrayType(FloatType), ArrayType(LongType), ArrayType(DoubleType), ArrayType(ByteType))

  /** An array of `n` items made by `item`, with a NULL item in one array of five, or a NULL array in one of six. */
  private def numbers(r: Random, n: Int)(item: => Any): Any =
    if (r.nextInt(6) == 0) null
    else {
      val nullAt = if (r.nextInt(5) == 0 && n > 0) r.nextInt(n) else -1
      new GenericArrayData(Array.tabulate[Any](n)(k => if (k == nullAt) null else item))
    }

  private def arrayRow(r: Random): GenericInternalRow = new GenericInternalRow(Array[Any](
    numbers(r, 3)(r.nextFloat()), numbers(r, r.nextInt(70))(r.nextLong()),
    numbers(r, r.nextInt(140))(r.nextDouble()), numbers(r, r.nextInt(9))(r.nextInt().toByte)))

  private def listValues(v: FieldVector): Seq[Any] = (0 until v.getValueCount).map { i =>
    if (v.isNull(i)) null else v.getObject(i).asInstanceOf[java.util.List[_]].asScala.toSeq
  }

  test("arrays of numbers (vectors, lists, large lists) come out as they went in, copied at once or item by item") {
    val random = new Random(7)
    val project = UnsafeProjection.create(StructType(arrayTypes.zipWithIndex.map { case (t, i) => StructField(s"c$i", t) }))
    Using.resource(new RootAllocator()) { allocator =>
      val writers = Seq("unsafe", "generic").map(_ -> new ArrowRowWriter("t", arraySchema.fields, arrayTypes, allocator))
      try for (batch <- 0 until 3) {
        // Enough rows that the item vectors grow past their first capacity.
        val rows = Seq.fill(if (batch == 0) 1 else 3000 + random.nextInt(2000))(arrayRow(random))
        rows.foreach { row =>
          writers.head._2.append(project(row).copy())
          writers(1)._2.append(row)
        }
        val Seq(unsafe, generic) = writers.map(_._2.seal())
        unsafe.zip(generic).zipWithIndex.foreach { case ((u, g), c) =>
          val want: Seq[Any] = rows.map(r => if (r.isNullAt(c)) null else r.getArray(c).toSeq[Any](arrayTypes(c).elementType))
          assert(listValues(u) == want,
            s"column ${arraySchema.fields(c).name}, batch $batch, Spark's arrays")
          assert(listValues(g) == listValues(u), s"column ${arraySchema.fields(c).name}, batch $batch, arrays of objects")
        }
        // Counted the same either way: each non-NULL item's width.
        assert(writers.head._2.bufferedBytes == writers(1)._2.bufferedBytes)
        writers.foreach(_._2.reset())
      } finally writers.foreach(_._2.close())
    }
  }
}
