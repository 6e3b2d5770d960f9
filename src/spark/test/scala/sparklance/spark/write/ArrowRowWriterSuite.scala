package sparklance.spark.write

import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.ListVector
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
}
