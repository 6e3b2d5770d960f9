package sparklance.format.rowids

import java.lang.Long.{compareUnsigned, toUnsignedString}
import java.nio.{ByteBuffer, ByteOrder}
import scala.jdk.CollectionConverters._
import com.google.protobuf.{ByteString, Message}
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.proto.RowIdProtos.{EncodedU64Array, U64Segment}
import sparklance.format.proto.RowIdProtos.EncodedU64Array.ArrayCase
import sparklance.format.proto.RowIdProtos.U64Segment.SegmentCase

/**
 * Lance U64Segment: a run of distinct u64 values (row ids, or row offsets in a version run) in the
 * most compact of five shapes. Values are Scala Longs read as unsigned, so ordering and widths use
 * unsigned arithmetic even though real row ids stay far below 2^63.
 *
 * Decoding trusts nothing: a segment comes from a manifest that another writer produced, and a
 * wrong row id silently attaches an update or a delete to the wrong row.
 */
object U64Segments {
  /** Arrays cannot hold more; a fragment with more rows than this could not be materialized anyway. */
  private val MaxValues = Int.MaxValue - 16

  def range(start: Long, end: Long): U64Segment =
    U64Segment.newBuilder().setRange(U64Segment.Range.newBuilder().setStart(start).setEnd(end)).build()

  def encode(values: Array[Long]): U64Segment = encode(values, 0, values.length)

  /**
   * The segment Lance would choose for values(from until until): sorted and contiguous is a Range;
   * sorted with gaps is whichever of RangeWithHoles, RangeWithBitmap or SortedArray has the
   * smallest estimated size (ties in that order, as Lance breaks them); anything else an Array.
   */
  def encode(values: Array[Long], from: Int, until: Int): U64Segment = {
    val n = until - from
    if (n == 0) return range(0, 0)
    var ascending = true
    var i = from + 1
    while (i < until && ascending) {
      ascending = compareUnsigned(values(i - 1), values(i)) < 0
      i += 1
    }
    if (!ascending) return U64Segment.newBuilder().setArray(EncodedArrays.encode(values, from, until)).build()

    val min = values(from)
    val max = values(until - 1)
    val holes = max - min + 1 - n // exact in unsigned arithmetic: distinct values never exceed the slots
    // an exclusive end past 2^64 - 1 cannot be written, so such a run can only be an array
    val endRepresentable = max != -1L
    if (holes == 0 && endRepresentable) return range(min, max + 1)

    val slots = unsignedToDouble(max - min) + 1
    val holesSize = 24 + 4 * unsignedToDouble(holes)
    val bitmapBytes = math.ceil(slots / 8)
    val bitmapSize = if (slots <= MaxValues) 24 + bitmapBytes else Double.PositiveInfinity
    val sortedSize = 24 + 2.0 * n
    if (!endRepresentable || (sortedSize < holesSize && sortedSize < bitmapSize))
      U64Segment.newBuilder().setSortedArray(EncodedArrays.encode(values, from, until)).build()
    else if (holesSize <= bitmapSize) rangeWithHoles(values, from, until, holes.toInt)
    else rangeWithBitmap(values, from, until, bitmapBytes.toInt)
  }

  private def rangeWithHoles(values: Array[Long], from: Int, until: Int, holeCount: Int): U64Segment = {
    val holes = new Array[Long](holeCount)
    var h = 0
    var i = from + 1
    while (i < until) {
      var missing = values(i - 1) + 1
      while (missing != values(i)) { holes(h) = missing; h += 1; missing += 1 }
      i += 1
    }
    U64Segment.newBuilder().setRangeWithHoles(U64Segment.RangeWithHoles.newBuilder()
      .setStart(values(from)).setEnd(values(until - 1) + 1)
      .setHoles(EncodedArrays.encode(holes, 0, holes.length))).build()
  }

  private def rangeWithBitmap(values: Array[Long], from: Int, until: Int, bytes: Int): U64Segment = {
    val start = values(from)
    val bitmap = new Array[Byte](bytes)
    var i = from
    while (i < until) {
      val slot = (values(i) - start).toInt
      bitmap(slot >>> 3) = (bitmap(slot >>> 3) | (1 << (slot & 7))).toByte
      i += 1
    }
    U64Segment.newBuilder().setRangeWithBitmap(U64Segment.RangeWithBitmap.newBuilder()
      .setStart(start).setEnd(values(until - 1) + 1).setBitmap(ByteString.copyFrom(bitmap))).build()
  }

  /**
   * How many values the segment holds, after checking its structure: known kind, widths, bounds,
   * holes. Does not materialize the values, so a huge Range costs nothing; the order of a
   * sorted_array is only checked by decode, which has to read every value anyway.
   */
  def count(segment: U64Segment, source: String): Long = {
    rejectUnknownFields(segment, "U64Segment", source)
    segment.getSegmentCase match {
      case SegmentCase.RANGE =>
        val r = segment.getRange
        rejectUnknownFields(r, "U64Segment.Range", source)
        span(r.getStart, r.getEnd, "range", source)
      case SegmentCase.RANGE_WITH_HOLES =>
        val r = segment.getRangeWithHoles
        rejectUnknownFields(r, "U64Segment.RangeWithHoles", source)
        span(r.getStart, r.getEnd, "range_with_holes", source) - validHoles(r, source).length
      case SegmentCase.RANGE_WITH_BITMAP =>
        val r = segment.getRangeWithBitmap
        rejectUnknownFields(r, "U64Segment.RangeWithBitmap", source)
        bitmapCount(r, span(r.getStart, r.getEnd, "range_with_bitmap", source), source)
      case SegmentCase.SORTED_ARRAY => EncodedArrays.count(segment.getSortedArray, "sorted_array", source)
      case SegmentCase.ARRAY => EncodedArrays.count(segment.getArray, "array", source)
      case SegmentCase.SEGMENT_NOT_SET =>
        // A kind added by a newer Lance arrives as an unknown field, rejected above; a segment
        // with no field at all was never a valid segment of any kind.
        throw new CorruptFileException(source, "a U64Segment names no segment kind")
    }
  }

  def decode(segment: U64Segment, source: String): Array[Long] = {
    val out = new Array[Long](materializable(count(segment, source), source))
    decodeInto(segment, out, 0, source)
    out
  }

  /**
   * Writes the values of a segment that count() has accepted into out(at ...); returns how many.
   * Shared by the sequence decoders so a fragment's ids land in one array without copies.
   */
  private[rowids] def decodeInto(segment: U64Segment, out: Array[Long], at: Int, source: String): Int =
    segment.getSegmentCase match {
      case SegmentCase.RANGE =>
        val r = segment.getRange
        val n = (r.getEnd - r.getStart).toInt
        var i = 0
        while (i < n) { out(at + i) = r.getStart + i; i += 1 }
        n
      case SegmentCase.RANGE_WITH_HOLES =>
        val r = segment.getRangeWithHoles
        val holes = validHoles(r, source)
        var h = 0
        var w = at
        var v = r.getStart
        while (v != r.getEnd) {
          if (h < holes.length && holes(h) == v) h += 1
          else { out(w) = v; w += 1 }
          v += 1
        }
        w - at
      case SegmentCase.RANGE_WITH_BITMAP =>
        val r = segment.getRangeWithBitmap
        val bitmap = r.getBitmap
        val slots = r.getEnd - r.getStart
        var w = at
        var slot = 0L
        while (slot < slots) {
          if ((bitmap.byteAt((slot >>> 3).toInt) & (1 << (slot & 7).toInt)) != 0) { out(w) = r.getStart + slot; w += 1 }
          slot += 1
        }
        w - at
      case SegmentCase.SORTED_ARRAY =>
        val n = EncodedArrays.decodeInto(segment.getSortedArray, out, at, "sorted_array", source)
        var i = at + 1
        while (i < at + n) {
          if (compareUnsigned(out(i - 1), out(i)) >= 0)
            throw new CorruptFileException(source, s"sorted_array is not strictly ascending at index ${i - at}: " +
              s"${toUnsignedString(out(i - 1))} then ${toUnsignedString(out(i))}")
          i += 1
        }
        n
      case SegmentCase.ARRAY => EncodedArrays.decodeInto(segment.getArray, out, at, "array", source)
      case SegmentCase.SEGMENT_NOT_SET => throw new CorruptFileException(source, "a U64Segment names no segment kind")
    }

  private[rowids] def materializable(count: Long, source: String): Int = {
    if (compareUnsigned(count, MaxValues) > 0)
      throw new CorruptFileException(source, s"holds ${toUnsignedString(count)} values, more than one fragment can have")
    count.toInt
  }

  private def span(start: Long, end: Long, kind: String, source: String): Long = {
    if (compareUnsigned(end, start) < 0)
      throw new CorruptFileException(source, s"$kind ends (${toUnsignedString(end)}) before it starts (${toUnsignedString(start)})")
    end - start
  }

  /** The holes, checked to be strictly ascending and inside the range, so count and decode agree. */
  private def validHoles(r: U64Segment.RangeWithHoles, source: String): Array[Long] = {
    if (!r.hasHoles) throw new CorruptFileException(source, "range_with_holes has no holes array")
    val holes = EncodedArrays.decode(r.getHoles, "range_with_holes.holes", source)
    var i = 0
    while (i < holes.length) {
      if (compareUnsigned(holes(i), r.getStart) < 0 || compareUnsigned(holes(i), r.getEnd) >= 0)
        throw new CorruptFileException(source, s"range_with_holes has hole ${toUnsignedString(holes(i))} outside " +
          s"[${toUnsignedString(r.getStart)}, ${toUnsignedString(r.getEnd)})")
      if (i > 0 && compareUnsigned(holes(i - 1), holes(i)) >= 0)
        throw new CorruptFileException(source, "range_with_holes has holes that are not strictly ascending")
      i += 1
    }
    holes
  }

  private def bitmapCount(r: U64Segment.RangeWithBitmap, slots: Long, source: String): Long = {
    val needed = java.lang.Long.divideUnsigned(slots, 8) + (if ((slots & 7) != 0) 1 else 0)
    if (compareUnsigned(r.getBitmap.size, needed) < 0)
      throw new CorruptFileException(source, s"range_with_bitmap covers $slots values but its bitmap has " +
        s"${r.getBitmap.size} bytes, not $needed")
    // bits past the range in the last byte, or extra bytes, mean nothing: only [start, end) counts
    val fullBytes = (slots >>> 3).toInt
    var present = 0L
    var b = 0
    while (b < fullBytes) { present += Integer.bitCount(r.getBitmap.byteAt(b) & 0xff); b += 1 }
    val tailBits = (slots & 7).toInt
    if (tailBits > 0) present += Integer.bitCount(r.getBitmap.byteAt(fullBytes) & ((1 << tailBits) - 1))
    present
  }

  private def unsignedToDouble(v: Long): Double =
    if (v >= 0) v.toDouble else (v >>> 1).toDouble * 2

  /** Parses a lineage message, with corrupt bytes and fields from a newer Lance as typed errors. */
  private[rowids] def parseMessage[T <: Message](bytes: Array[Byte], what: String, source: String)(parse: Array[Byte] => T): T = {
    val message =
      try parse(bytes)
      catch {
        case e: com.google.protobuf.InvalidProtocolBufferException =>
          throw new CorruptFileException(source, s"not a $what: ${e.getMessage}", e)
      }
    rejectUnknownFields(message, what, source)
    message
  }

  private[rowids] def rejectUnknownFields(message: Message, what: String, source: String): Unit = {
    val unknown = message.getUnknownFields.asMap.keySet.asScala
    if (unknown.nonEmpty)
      throw new UnsupportedFeatureException(s"$source: $what carries field(s) ${unknown.toSeq.sorted.mkString(", ")} " +
        "that this library does not know (a row id encoding from a newer Lance?); refusing to guess what they mean")
  }

  /** EncodedU64Array: values as u16 or u32 offsets from their minimum, or as plain u64s. */
  private[rowids] object EncodedArrays {
    def encode(values: Array[Long], from: Int, until: Int): EncodedU64Array = {
      val n = until - from
      if (n == 0) return EncodedU64Array.newBuilder().setU64Array(EncodedU64Array.U64Array.getDefaultInstance).build()
      var min = values(from)
      var max = values(from)
      var i = from + 1
      while (i < until) {
        if (compareUnsigned(values(i), min) < 0) min = values(i)
        if (compareUnsigned(values(i), max) > 0) max = values(i)
        i += 1
      }
      val width = max - min
      if (compareUnsigned(width, 0xffffL) <= 0) {
        val buf = littleEndian(2 * n)
        i = from
        while (i < until) { buf.putShort((values(i) - min).toShort); i += 1 }
        EncodedU64Array.newBuilder().setU16Array(EncodedU64Array.U16Array.newBuilder()
          .setBase(min).setOffsets(ByteString.copyFrom(buf.array))).build()
      } else if (compareUnsigned(width, 0xffffffffL) <= 0) {
        val buf = littleEndian(4 * n)
        i = from
        while (i < until) { buf.putInt((values(i) - min).toInt); i += 1 }
        EncodedU64Array.newBuilder().setU32Array(EncodedU64Array.U32Array.newBuilder()
          .setBase(min).setOffsets(ByteString.copyFrom(buf.array))).build()
      } else {
        val buf = littleEndian(8 * n)
        i = from
        while (i < until) { buf.putLong(values(i)); i += 1 }
        EncodedU64Array.newBuilder().setU64Array(EncodedU64Array.U64Array.newBuilder()
          .setValues(ByteString.copyFrom(buf.array))).build()
      }
    }

    private def littleEndian(bytes: Int): ByteBuffer = {
      if (bytes < 0) throw new IllegalArgumentException("too many values for one EncodedU64Array")
      ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN)
    }

    /** (byte width, packed bytes, base) after checking the array is a kind we know and well formed. */
    private def layout(array: EncodedU64Array, what: String, source: String): (Int, ByteString, Long) = {
      rejectUnknownFields(array, s"$what (EncodedU64Array)", source)
      val (width, bytes, base) = array.getArrayCase match {
        case ArrayCase.U16_ARRAY =>
          rejectUnknownFields(array.getU16Array, s"$what.u16_array", source)
          (2, array.getU16Array.getOffsets, array.getU16Array.getBase)
        case ArrayCase.U32_ARRAY =>
          rejectUnknownFields(array.getU32Array, s"$what.u32_array", source)
          (4, array.getU32Array.getOffsets, array.getU32Array.getBase)
        case ArrayCase.U64_ARRAY =>
          rejectUnknownFields(array.getU64Array, s"$what.u64_array", source)
          (8, array.getU64Array.getValues, 0L)
        case ArrayCase.ARRAY_NOT_SET =>
          throw new CorruptFileException(source, s"$what is an EncodedU64Array that names no array kind")
      }
      if (bytes.size % width != 0)
        throw new CorruptFileException(source, s"$what holds ${bytes.size} bytes, not a multiple of its $width-byte width")
      (width, bytes, base)
    }

    def count(array: EncodedU64Array, what: String, source: String): Long = {
      val (width, bytes, _) = layout(array, what, source)
      bytes.size / width
    }

    def decode(array: EncodedU64Array, what: String, source: String): Array[Long] = {
      val out = new Array[Long](count(array, what, source).toInt)
      decodeInto(array, out, 0, what, source)
      out
    }

    def decodeInto(array: EncodedU64Array, out: Array[Long], at: Int, what: String, source: String): Int = {
      val (width, bytes, base) = layout(array, what, source)
      val buf = bytes.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN)
      val n = bytes.size / width
      var i = 0
      while (i < n) {
        out(at + i) = width match {
          case 2 => base + (buf.getShort() & 0xffffL)
          case 4 => base + (buf.getInt() & 0xffffffffL)
          case _ => buf.getLong()
        }
        if (width < 8 && compareUnsigned(out(at + i), base) < 0)
          throw new CorruptFileException(source, s"$what has base ${toUnsignedString(base)} plus an offset past 2^64")
        i += 1
      }
      n
    }
  }
}
