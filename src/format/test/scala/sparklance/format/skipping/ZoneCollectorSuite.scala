package sparklance.format.skipping

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector._
import org.apache.arrow.vector.types.{DateUnit, FloatingPointPrecision, TimeUnit}
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.{Random, Using}
import sparklance.format.io.LocalStorage
import sparklance.format.table.{BasePaths, FragmentScanner, FragmentWriter, LanceSchema, StorageVersion}

/**
 * The zones a FragmentWriter gathers while it writes are the zones ZoneBuilder computes by reading
 * the files back (what create_index and pylance's zone maps hold), for every type zones hold, with
 * nulls, NaN, both zeros, empty and non-ASCII strings, files cut inside batches and zones cut
 * inside and across batches.
 */
class ZoneCollectorSuite extends AnyFunSuite {
  private def field(name: String, t: ArrowType) = new Field(name, FieldType.nullable(t), null)
  private val arrow = new Schema(Seq(
    field("l", new ArrowType.Int(64, true)), field("i", new ArrowType.Int(32, true)), field("sh", new ArrowType.Int(16, true)),
    field("by", new ArrowType.Int(8, true)), field("d", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)),
    field("f", new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)), field("s", ArrowType.Utf8.INSTANCE),
    field("ls", ArrowType.LargeUtf8.INSTANCE), field("bin", ArrowType.Binary.INSTANCE), field("b", ArrowType.Bool.INSTANCE),
    field("dt", new ArrowType.Date(DateUnit.DAY)), field("ts", new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC")),
    field("dec", new ArrowType.Decimal(10, 2, 128)), field("wide_dec", new ArrowType.Decimal(38, 4, 128))).asJava)
  private val schema = LanceSchema.fromArrow(arrow)
  // Longer than ZoneBounds.MaxBytes: ASCII, cut inside a character, all non-ASCII (no short max).
  private val long = Seq("x" * 2000, "x" * 1023 + "\u00e9" + "y" * 50, "\u00e9" * 700, "b" + "\uffff" * 600)
  // Shared heads of 8 bytes and more, differing in bytes over 0x7f and under: compared 8 bytes at a time.
  private val prefixed = Seq("prefix12\u00e9x", "prefix12ax", "prefix12345678\u00ff", "prefix123456789", "prefix12345678\u0001z")
  // Values that differ only in trailing zero bytes, shorter and longer than 8 bytes: their heads
  // (the first 8 bytes, zero-padded) tie, so they are compared whole.
  private val zeros = Seq("a\u0000", "a\u0000\u0000", "prefix12\u0000", "prefix1\u0000", "prefix1")
  private val strings = Seq("", "a", "ab", "b", "\u00e9t\u00e9", "zz\uD83D\uDE00", "\u0000", "A") ++ prefixed ++ zeros ++ long

  private def fill(v: FieldVector, n: Int, rnd: Random): Unit = {
    def nul(i: Int): Boolean = rnd.nextInt(7) == 0 || (i / 50) % 5 == 3 // some all-null stretches
    v.setInitialCapacity(n); v.allocateNew()
    for (i <- 0 until n) if (nul(i)) v match {
      case x: BaseFixedWidthVector => x.setNull(i)
      case x: BaseVariableWidthVector => x.setNull(i)
      case x: BaseLargeVariableWidthVector => x.setNull(i)
    } else v match {
      case x: BigIntVector => x.setSafe(i, rnd.nextLong())
      case x: IntVector => x.setSafe(i, rnd.nextInt(100) - 50)
      case x: SmallIntVector => x.setSafe(i, (rnd.nextInt(1000) - 500).toShort)
      case x: TinyIntVector => x.setSafe(i, (rnd.nextInt(200) - 100).toByte)
      case x: Float8Vector => x.setSafe(i, Seq(Double.NaN, -0.0, 0.0, Double.NegativeInfinity, rnd.nextGaussian())(rnd.nextInt(5)))
      case x: Float4Vector => x.setSafe(i, Seq(Float.NaN, -0.0f, 0.0f, Float.PositiveInfinity, rnd.nextFloat())(rnd.nextInt(5)))
      case x: VarCharVector => x.setSafe(i, strings(rnd.nextInt(strings.size)).getBytes(UTF_8))
      case x: LargeVarCharVector => x.setSafe(i, strings(rnd.nextInt(strings.size)).getBytes(UTF_8))
      case x: VarBinaryVector =>
        val n = if (rnd.nextInt(10) == 0) 1000 + rnd.nextInt(100) else rnd.nextInt(4)
        x.setSafe(i, Array.fill(n)(Seq(0xff, 0x7f, 0x20, rnd.nextInt(256))(rnd.nextInt(4)).toByte))
      case x: BitVector => x.setSafe(i, rnd.nextInt(2))
      case x: DateDayVector => x.setSafe(i, rnd.nextInt(40000) - 20000)
      case x: TimeStampVector => x.setSafe(i, rnd.nextLong() >> 8)
      case x: DecimalVector if x.getPrecision == 38 =>
        // Values whose high 8 bytes differ too, of both signs, and ties of the high bytes.
        val unscaled = Seq(new java.math.BigInteger(1 + rnd.nextInt(120), rnd.self), java.math.BigInteger.valueOf(rnd.nextLong()),
          java.math.BigInteger.ONE.shiftLeft(64).add(java.math.BigInteger.valueOf(rnd.nextInt(3))))(rnd.nextInt(3))
        x.setSafe(i, new java.math.BigDecimal(if (rnd.nextBoolean()) unscaled.negate() else unscaled, 4))
      case x: DecimalVector => x.setSafe(i, java.math.BigDecimal.valueOf(rnd.nextInt(100000) - 50000, 2))
    }
    v.setValueCount(n)
  }

  // NaN bounds compare equal here (a case class compares doubles with ==).
  private def norm(z: Zone): String = {
    def show(v: Option[ZoneValue]) = v.map {
      case ZoneValue.Floating(d) => s"F${java.lang.Double.doubleToLongBits(d)}"
      case ZoneValue.Bytes(b) => s"B${b.mkString(",")}"
      case other => other.toString
    }
    s"${z.fragmentId} ${z.start} ${z.length} ${show(z.min)} ${show(z.max)} ${z.nullCount} ${z.nanCount}"
  }

  for (seed <- 1 to 6) test(s"gathered zones equal zones read back (seed $seed)") {
    val rnd = new Random(seed)
    val rowsPerZone = Seq(1L, 7L, 64L, 100L, 8192L)(rnd.nextInt(5))
    val maxRowsPerFile = Seq(1L, 90L, 333L, 5000L)(rnd.nextInt(4))
    val columns = schema.fields.map(f => ZoneColumn(s"${f.name}_idx", f.id, rowsPerZone))
    val dir = Files.createTempDirectory("zones").toString
    Using.resource(new RootAllocator()) { allocator =>
      val writer = new FragmentWriter(LocalStorage, dir, schema, StorageVersion.V2_1, allocator, maxRowsPerFile, zoneColumns = columns)
      for (_ <- 0 until 3) {
        val vectors = arrow.getFields.asScala.map(_.createVector(allocator)).toSeq
        try { val n = 1 + rnd.nextInt(400); vectors.foreach(fill(_, n, rnd)); writer.write(vectors) }
        finally vectors.foreach(_.close())
      }
      val fragments = writer.finish().zipWithIndex.map { case (f, i) => f.toBuilder.setId(i).build() }
      val gathered = writer.zones
      for (f <- schema.fields) {
        val read = fragments.flatMap { fragment =>
          val builder = new ZoneBuilder(fragment.getId, rowsPerZone)
          Using.resource(new FragmentScanner(LocalStorage, BasePaths.own(dir), fragment, Seq(f), allocator, 0,
              fragment.getPhysicalRows)) { scanner =>
            scanner.foreach { batch =>
              try (0 until batch.numRows).foreach(i =>
                builder.add(Integer.toUnsignedLong(batch.offsets(i)), ZoneValues.at(batch.vectors.head, i)))
              finally batch.close()
            }
          }
          builder.result()
        }
        assert(gathered.of(f.id, fragments).map(_.map(norm)) == Some(read.map(norm)), s"column ${f.name}")
      }
    }
  }

  test("bounds of long strings and binaries are short, valid UTF-8, and hold the values they bound") {
    val rnd = new Random(7)
    val decoder = () => UTF_8.newDecoder()
    val texts = long ++ Seq.fill(200)(Seq.fill(1000 + rnd.nextInt(60))(Seq("a", "\u00e9", "\u4e2d", "\uD83D\uDE00", "~")(rnd.nextInt(5))).mkString)
    for (t <- texts) {
      val bytes = t.getBytes(UTF_8)
      val low = ZoneBounds.lower(ZoneValue.Bytes(bytes)).asInstanceOf[ZoneValue.Bytes].value
      assert(low.length <= ZoneBounds.MaxBytes && java.util.Arrays.compareUnsigned(low, bytes) <= 0)
      decoder().decode(java.nio.ByteBuffer.wrap(low)) // throws on a cut character
      ZoneBounds.upper(ZoneValue.Bytes(bytes)) match {
        case Some(ZoneValue.Bytes(high)) =>
          assert(high.length <= ZoneBounds.MaxBytes && java.util.Arrays.compareUnsigned(high, bytes) > 0)
          decoder().decode(java.nio.ByteBuffer.wrap(high))
        case None => assert(!bytes.take(ZoneBounds.MaxBytes).exists(b => (b & 0xff) < 0x7f), t.take(20))
        case other => fail(other.toString)
      }
    }
    // Values up to the limit stay whole.
    val edge = ZoneValue.Bytes(Array.fill(ZoneBounds.MaxBytes)('q'.toByte))
    assert(ZoneBounds.lower(edge) == edge && ZoneBounds.upper(edge) == Some(edge))
  }
}
