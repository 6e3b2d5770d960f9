package sparklance.format.rowids

import scala.util.Random
import com.google.protobuf.ByteString
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.proto.RowIdProtos.{EncodedU64Array, U64Segment}
import sparklance.format.proto.RowIdProtos.EncodedU64Array.ArrayCase
import sparklance.format.proto.RowIdProtos.U64Segment.SegmentCase

class U64SegmentsSuite extends AnyFunSuite {
  private val source = "test segment"

  private def roundTrip(values: Array[Long], expected: SegmentCase): U64Segment = {
    val segment = U64Segments.encode(values)
    assert(segment.getSegmentCase == expected, s"for ${values.take(20).mkString(",")}")
    // what a reader sees: the serialized bytes, not the builder's object
    val reread = U64Segment.parseFrom(segment.toByteArray)
    assert(U64Segments.decode(reread, source).sameElements(values))
    assert(U64Segments.count(reread, source) == values.length)
    segment
  }

  test("no values encode as the empty Range(0, 0)") {
    val segment = roundTrip(Array.emptyLongArray, SegmentCase.RANGE)
    assert(segment.getRange.getStart == 0 && segment.getRange.getEnd == 0)
  }

  test("a single value is a one-value Range") {
    val segment = roundTrip(Array(42L), SegmentCase.RANGE)
    assert(segment.getRange.getStart == 42 && segment.getRange.getEnd == 43)
  }

  test("sorted contiguous values are a Range with an exclusive end") {
    val segment = roundTrip((100L until 1100L).toArray, SegmentCase.RANGE)
    assert(segment.getRange.getStart == 100 && segment.getRange.getEnd == 1100)
  }

  test("a long range with a few gaps is a RangeWithHoles whose holes are absolute values") {
    val values = (1000L until 2000L).filterNot(Set(1100L, 1500L, 1999L - 1)).toArray
    val segment = roundTrip(values, SegmentCase.RANGE_WITH_HOLES)
    val r = segment.getRangeWithHoles
    assert(r.getStart == 1000 && r.getEnd == 2000)
    assert(U64Segments.EncodedArrays.decode(r.getHoles, "holes", source).toSeq == Seq(1100L, 1500L, 1998L))
    assert(r.getHoles.getArrayCase == ArrayCase.U16_ARRAY && r.getHoles.getU16Array.getBase == 1100)
  }

  test("a dense range with many gaps is a RangeWithBitmap, least significant bit first") {
    // 4 holes: holes 40 bytes, bitmap 25, sorted array 32
    val segment = roundTrip(Array(10L, 12L, 13L, 17L), SegmentCase.RANGE_WITH_BITMAP)
    val r = segment.getRangeWithBitmap
    assert(r.getStart == 10 && r.getEnd == 18)
    assert(r.getBitmap.toByteArray.toSeq == Seq(0x8d.toByte)) // bits 0, 2, 3, 7
    // a bitmap that spans bytes: ceil(slots / 8) bytes
    val wide = roundTrip((0L until 100L).filter(_ % 3 != 1).toArray, SegmentCase.RANGE_WITH_BITMAP)
    assert(wide.getRangeWithBitmap.getBitmap.size == 13) // 0..99: 100 slots
  }

  test("sparse sorted values are a SortedArray") {
    val segment = roundTrip((0L until 50L).map(_ * 1000).toArray, SegmentCase.SORTED_ARRAY)
    assert(segment.getSortedArray.getArrayCase == ArrayCase.U16_ARRAY)
  }

  test("unsorted values are an Array, in their original order") {
    roundTrip(Array(5L, 3L, 4L), SegmentCase.ARRAY)
    roundTrip(Array(7L, 6L), SegmentCase.ARRAY)
    roundTrip((0L until 100L).reverse.toArray, SegmentCase.ARRAY)
  }

  test("size ties go to RangeWithHoles over RangeWithBitmap, and to RangeWithBitmap over SortedArray") {
    // 32 slots, 1 hole: holes 24 + 4 = 28, bitmap 24 + 4 = 28, sorted 24 + 62
    roundTrip((0L until 32L).filter(_ != 9).toArray, SegmentCase.RANGE_WITH_HOLES)
    // 2 values over 32 slots: bitmap 24 + 4 = 28, sorted 24 + 4 = 28, holes 24 + 120
    roundTrip(Array(0L, 31L), SegmentCase.RANGE_WITH_BITMAP)
    // one more slot tips it to the sorted array: bitmap 24 + 5
    roundTrip(Array(0L, 32L), SegmentCase.SORTED_ARRAY)
  }

  test("an EncodedU64Array takes the narrowest width that holds max - min") {
    def array(values: Long*): EncodedU64Array = {
      val segment = roundTrip(values.toArray, SegmentCase.ARRAY) // descending: forces an Array
      segment.getArray
    }
    val base = 7_000_000_000L
    assert(array(base + 65535, base).getArrayCase == ArrayCase.U16_ARRAY)
    assert(array(base + 65536, base).getArrayCase == ArrayCase.U32_ARRAY)
    assert(array(base + 0xffffffffL, base).getArrayCase == ArrayCase.U32_ARRAY)
    assert(array(base + 0x100000000L, base).getArrayCase == ArrayCase.U64_ARRAY)

    val u16 = array(base + 258, base)
    assert(u16.getU16Array.getBase == base)
    assert(u16.getU16Array.getOffsets.toByteArray.toSeq == Seq[Byte](2, 1, 0, 0)) // little endian
    val u32 = array(base + 0x01020304L + 65536, base)
    assert(u32.getU32Array.getOffsets.toByteArray.toSeq == Seq[Byte](4, 3, 3, 1, 0, 0, 0, 0))
    val u64 = array(0x0102030405060708L, 1L)
    assert(u64.getU64Array.getValues.toByteArray.toSeq == Seq[Byte](8, 7, 6, 5, 4, 3, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0))

    val empty = U64Segments.EncodedArrays.encode(Array.emptyLongArray, 0, 0)
    assert(empty.getArrayCase == ArrayCase.U64_ARRAY && empty.getU64Array.getValues.isEmpty)
  }

  test("values at the top of the signed and unsigned ranges survive") {
    roundTrip(Array(Long.MaxValue - 3, Long.MaxValue - 2, Long.MaxValue - 1), SegmentCase.RANGE)
    roundTrip(Array(Long.MaxValue, Long.MinValue), SegmentCase.RANGE) // 2^63 - 1, 2^63
    roundTrip(Array(0L, -1L), SegmentCase.SORTED_ARRAY) // 0 and 2^64 - 1: one u64 apart
    roundTrip(Array(-2L, -1L), SegmentCase.SORTED_ARRAY) // a Range would need end 2^64
    roundTrip(Array(-1L, 0L), SegmentCase.ARRAY)
  }

  test("thousands of random sequences of mixed shapes round trip and pick the expected kind") {
    val rnd = new Random(20240611)
    val seen = scala.collection.mutable.Set.empty[SegmentCase]
    for (_ <- 0 until 5000) {
      val base = rnd.nextInt(4) match {
        case 0 => 0L
        case 1 => rnd.nextInt(1 << 20).toLong
        case 2 => rnd.nextLong() >>> 2
        case _ => Long.MaxValue - 10_000_000L
      }
      val n = rnd.nextInt(300)
      val sorted: Array[Long] = rnd.nextInt(4) match {
        case 0 => Array.tabulate(n)(i => base + i)
        case 1 => // dense: a few holes
          Array.tabulate(n * 2)(i => base + i).filter(_ => rnd.nextInt(50) != 0)
        case 2 => // half full
          Array.tabulate(n * 2)(i => base + i).filter(_ => rnd.nextBoolean())
        case _ => // sparse, steps small or very wide
          val step = 1 + rnd.nextInt(if (rnd.nextBoolean()) 100 else 5_000_000)
          Array.tabulate(n)(i => base + i.toLong * step)
      }
      val values = if (rnd.nextInt(4) == 0) rnd.shuffle(sorted.toSeq).toArray else sorted
      val segment = U64Segments.encode(values)
      val reread = U64Segment.parseFrom(segment.toByteArray)
      assert(U64Segments.decode(reread, source).sameElements(values))
      assert(U64Segments.count(reread, source) == values.length)
      assert(segment.getSegmentCase == expectedKind(values))
      seen += segment.getSegmentCase
    }
    assert(seen.size == 5, s"the random shapes reached only $seen")
  }

  /** The choice rule, restated independently of the encoder. */
  private def expectedKind(values: Array[Long]): SegmentCase = {
    def unsigned(v: Long) = BigInt(java.lang.Long.toUnsignedString(v))
    val ascending = values.indices.drop(1).forall(i => unsigned(values(i - 1)) < unsigned(values(i)))
    if (values.isEmpty) SegmentCase.RANGE
    else if (!ascending) SegmentCase.ARRAY
    else {
      val slots = unsigned(values.last) - unsigned(values.head) + 1
      val holes = slots - values.length
      if (holes == 0) SegmentCase.RANGE
      else {
        val sizes = Seq(
          SegmentCase.RANGE_WITH_HOLES -> (24 + 4 * holes),
          SegmentCase.RANGE_WITH_BITMAP -> (24 + (slots + 7) / 8),
          SegmentCase.SORTED_ARRAY -> BigInt(24 + 2 * values.length))
        sizes.minBy(_._2)._1 // minBy keeps the first of equal sizes
      }
    }
  }

  // ----- corrupt and unknown segments -----

  private def rangeSegment(start: Long, end: Long) = U64Segments.range(start, end)

  private def u16(base: Long, bytes: Int*) = EncodedU64Array.newBuilder().setU16Array(EncodedU64Array.U16Array
    .newBuilder().setBase(base).setOffsets(ByteString.copyFrom(bytes.map(_.toByte).toArray))).build()

  private def assertCorrupt(segment: U64Segment, mentions: String): Unit = {
    val e = intercept[CorruptFileException](U64Segments.decode(segment, source))
    assert(e.getMessage.contains(source) && e.getMessage.contains(mentions), e.getMessage)
  }

  test("a range that ends before it starts is corrupt") {
    assertCorrupt(rangeSegment(10, 5), "ends")
    assertCorrupt(U64Segment.newBuilder().setRangeWithHoles(U64Segment.RangeWithHoles.newBuilder()
      .setStart(10).setEnd(5).setHoles(u16(0))).build(), "ends")
    assertCorrupt(U64Segment.newBuilder().setRangeWithBitmap(U64Segment.RangeWithBitmap.newBuilder()
      .setStart(10).setEnd(5)).build(), "ends")
  }

  test("packed arrays whose byte length is not a multiple of their width are corrupt") {
    assertCorrupt(U64Segment.newBuilder().setArray(u16(0, 1, 2, 3)).build(), "2-byte")
    assertCorrupt(U64Segment.newBuilder().setSortedArray(EncodedU64Array.newBuilder().setU32Array(
      EncodedU64Array.U32Array.newBuilder().setOffsets(ByteString.copyFrom(new Array[Byte](6))))).build(), "4-byte")
    assertCorrupt(U64Segment.newBuilder().setArray(EncodedU64Array.newBuilder().setU64Array(
      EncodedU64Array.U64Array.newBuilder().setValues(ByteString.copyFrom(new Array[Byte](12))))).build(), "8-byte")
    assertCorrupt(U64Segment.newBuilder().setArray(EncodedU64Array.getDefaultInstance).build(), "no array kind")
  }

  test("an offset that carries the base past 2^64 is corrupt") {
    assertCorrupt(U64Segment.newBuilder().setArray(u16(-2L, 5, 0)).build(), "past 2^64")
  }

  test("a bitmap shorter than its range is corrupt") {
    assertCorrupt(U64Segment.newBuilder().setRangeWithBitmap(U64Segment.RangeWithBitmap.newBuilder()
      .setStart(0).setEnd(17).setBitmap(ByteString.copyFrom(Array[Byte](-1, -1)))).build(), "bitmap has 2 bytes")
  }

  test("holes that are missing, outside the range or out of order are corrupt") {
    def holes(start: Long, end: Long, array: Option[EncodedU64Array]) = {
      val r = U64Segment.RangeWithHoles.newBuilder().setStart(start).setEnd(end)
      array.foreach(r.setHoles)
      U64Segment.newBuilder().setRangeWithHoles(r).build()
    }
    assertCorrupt(holes(0, 10, None), "no holes")
    assertCorrupt(holes(100, 110, Some(u16(110, 0, 0))), "outside")
    assertCorrupt(holes(100, 110, Some(u16(99, 0, 0))), "outside")
    assertCorrupt(holes(100, 110, Some(u16(101, 2, 0, 1, 0))), "ascending")
    assert(U64Segments.decode(holes(100, 105, Some(u16(101, 0, 0, 2, 0))), source).toSeq == Seq(100L, 102L, 104L))
  }

  test("a sorted_array that is not ascending is corrupt") {
    assertCorrupt(U64Segment.newBuilder().setSortedArray(u16(0, 5, 0, 3, 0)).build(), "not strictly ascending")
    assertCorrupt(U64Segment.newBuilder().setSortedArray(u16(0, 5, 0, 5, 0)).build(), "not strictly ascending")
  }

  test("a segment with no kind at all is corrupt") {
    assertCorrupt(U64Segment.getDefaultInstance, "no segment kind")
  }

  test("a segment kind or field this library does not know is unsupported, never guessed") {
    // field 6, length 0: what a sixth segment kind from a newer Lance would look like
    val newKind = U64Segment.parseFrom(Array[Byte](0x32, 0))
    val e = intercept[UnsupportedFeatureException](U64Segments.decode(newKind, source))
    assert(e.getMessage.contains("U64Segment") && e.getMessage.contains("6"), e.getMessage)
    intercept[UnsupportedFeatureException](U64Segments.count(newKind, source))

    // a known kind plus an unknown sibling field
    val withExtra = U64Segment.parseFrom(rangeSegment(0, 3).toByteArray ++ Array[Byte](0x38, 1))
    intercept[UnsupportedFeatureException](U64Segments.decode(withExtra, source))
    // an unknown field inside the Range message: {1: 0, 2: 3, 3: 1}
    val rangeExtra = U64Segment.parseFrom(Array[Byte](0x0a, 6, 0x08, 0, 0x10, 3, 0x18, 1))
    intercept[UnsupportedFeatureException](U64Segments.decode(rangeExtra, source))
    // an EncodedU64Array with a fourth width (field 4)
    val newWidth = U64Segment.parseFrom(Array[Byte](0x2a, 2, 0x22, 0))
    intercept[UnsupportedFeatureException](U64Segments.decode(newWidth, source))
  }

  test("a segment too large to materialize is refused, but can still be counted") {
    val huge = rangeSegment(0, 1L << 40)
    assert(U64Segments.count(huge, source) == (1L << 40))
    assertCorrupt(huge, "more than one fragment")
  }
}
