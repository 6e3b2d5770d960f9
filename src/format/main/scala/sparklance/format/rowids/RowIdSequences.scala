package sparklance.format.rowids

import scala.collection.mutable.ArrayBuffer
import com.google.protobuf.{CodedInputStream, InvalidProtocolBufferException, WireFormat}
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.proto.RowIdProtos.{RowIdSequence, U64Segment}
import sparklance.format.proto.RowIdProtos.U64Segment.SegmentCase

/**
 * A fragment's row ids in row offset order, serialized as a Lance RowIdSequence: the bytes that
 * go into DataFragment.inline_row_ids (or an external row id file).
 */
object RowIdSequences {
  /**
   * Consecutive ids at least this long get a Range segment of their own. Shorter runs are cheaper
   * inside the neighbouring segment than as a segment with its own framing (about 10 bytes).
   */
  val MinRangeRun = 16

  /** Field 1 (segments), wire type 2 (length delimited): the tag byte that opens every segment. */
  private val SegmentTag = (RowIdSequence.SEGMENTS_FIELD_NUMBER << 3) | WireFormat.WIRETYPE_LENGTH_DELIMITED

  /** Fresh ids start, start + 1, ... for a fragment of count new rows. */
  def range(start: Long, count: Long): Array[Byte] = appendRange(Array.emptyByteArray, start, count)

  /**
   * Splits ids into segments: each maximal run of at least MinRangeRun consecutive ids becomes a
   * Range, and each stretch between such runs becomes one segment of the kind U64Segments picks.
   * When one segment for everything is no larger (many short runs with small gaps, where a single
   * RangeWithHoles beats dozens of Ranges), that is written instead.
   */
  def encode(ids: Array[Long]): Array[Byte] = {
    val split = RowIdSequence.newBuilder()
    splitIntoSegments(ids).foreach(split.addSegments)
    val splitBytes = split.build().toByteArray
    if (split.getSegmentsCount <= 1) return splitBytes
    val whole = RowIdSequence.newBuilder().addSegments(U64Segments.encode(ids)).build()
    if (whole.getSerializedSize <= splitBytes.length) whole.toByteArray else splitBytes
  }

  private def splitIntoSegments(ids: Array[Long]): Seq[U64Segment] = {
    val segments = ArrayBuffer.empty[U64Segment]
    var stretchStart = 0
    var runStart = 0
    while (runStart < ids.length) {
      var runEnd = runStart + 1
      // -1L is 2^64 - 1 unsigned: the id after it would wrap to 0, which is not consecutive
      while (runEnd < ids.length && ids(runEnd - 1) != -1L && ids(runEnd) == ids(runEnd - 1) + 1) runEnd += 1
      if (runEnd - runStart >= MinRangeRun && ids(runEnd - 1) != -1L) {
        if (stretchStart < runStart) segments += U64Segments.encode(ids, stretchStart, runStart)
        segments += U64Segments.range(ids(runStart), ids(runEnd - 1) + 1)
        stretchStart = runEnd
      }
      runStart = runEnd
    }
    if (stretchStart < ids.length) segments += U64Segments.encode(ids, stretchStart, ids.length)
    segments.toSeq
  }

  def decode(bytes: Array[Byte], source: String): Array[Long] = {
    val sequence = parse(bytes, source)
    val out = new Array[Long](U64Segments.materializable(totalCount(sequence, source), source))
    var at = 0
    sequence.getSegmentsList.forEach { segment => at += U64Segments.decodeInto(segment, out, at, source) }
    out
  }

  /** A lookup of ids by row offset that expands no Range segment (see [[RowIdLookup]]). */
  def lookup(bytes: Array[Byte], source: String): RowIdLookup = {
    val sequence = parse(bytes, source)
    totalCount(sequence, source)
    new RowIdLookup(sequence.getSegmentsList.toArray(new Array[U64Segment](0)), source)
  }

  /** The number of row ids, without materializing them (a Range costs the same at any length). */
  def count(bytes: Array[Byte], source: String = "a row id sequence"): Long =
    totalCount(parse(bytes, source), source)

  /**
   * Appends ids start until start + count to a serialized sequence. The existing segments are
   * kept byte for byte (a repeated protobuf field is extended by concatenation); only a trailing
   * Range that ends exactly at start is rewritten, so preserved ids followed by fresh ones stay one
   * Range when they line up.
   */
  def appendRange(bytes: Array[Byte], start: Long, count: Long, source: String = "a row id sequence"): Array[Byte] = {
    require(count >= 0, s"cannot append $count row ids")
    require(count == 0 || java.lang.Long.compareUnsigned(start + count, start) > 0,
      s"row ids from ${java.lang.Long.toUnsignedString(start)} + $count pass 2^64")
    if (count == 0) return bytes
    val (lastOffset, lastLength) = lastSegmentPosition(bytes, source)
    if (lastOffset >= 0) {
      val last = parseSegment(bytes, lastOffset, lastLength, source)
      // a segment with fields we do not know is left exactly as it is
      if (last.getSegmentCase == SegmentCase.RANGE && last.getRange.getEnd == start &&
          last.getUnknownFields.asMap.isEmpty && last.getRange.getUnknownFields.asMap.isEmpty &&
          java.lang.Long.compareUnsigned(last.getRange.getStart, start) <= 0) {
        val merged = segmentEntry(U64Segments.range(last.getRange.getStart, start + count))
        return java.util.Arrays.copyOf(bytes, lastOffset) ++ merged
      }
    }
    bytes ++ segmentEntry(U64Segments.range(start, start + count))
  }

  /** One segment framed as it appears inside a RowIdSequence (tag, length, message). */
  private def segmentEntry(segment: U64Segment): Array[Byte] =
    RowIdSequence.newBuilder().addSegments(segment).build().toByteArray

  /** Where the last segment entry starts (its tag) and its message length; (-1, 0) if none. */
  private def lastSegmentPosition(bytes: Array[Byte], source: String): (Int, Int) = {
    val in = CodedInputStream.newInstance(bytes)
    var lastOffset = -1
    var lastLength = 0
    try {
      var offset = in.getTotalBytesRead
      var tag = in.readTag()
      while (tag != 0) {
        if (tag != SegmentTag)
          throw new UnsupportedFeatureException(s"$source: RowIdSequence carries field ${tag >>> 3} " +
            "that this library does not know (a row id encoding from a newer Lance?); refusing to guess what it means")
        lastOffset = offset
        lastLength = in.readRawVarint32()
        in.skipRawBytes(lastLength)
        offset = in.getTotalBytesRead
        tag = in.readTag()
      }
    } catch {
      case e: InvalidProtocolBufferException =>
        throw new CorruptFileException(source, s"not a RowIdSequence: ${e.getMessage}", e)
    }
    (lastOffset, lastLength)
  }

  private def parseSegment(bytes: Array[Byte], entryOffset: Int, length: Int, source: String): U64Segment = {
    // the message follows its one-byte tag and the varint length
    val lengthBytes = com.google.protobuf.CodedOutputStream.computeUInt32SizeNoTag(length)
    try U64Segment.parseFrom(java.nio.ByteBuffer.wrap(bytes, entryOffset + 1 + lengthBytes, length))
    catch {
      case e: InvalidProtocolBufferException =>
        throw new CorruptFileException(source, s"last segment is not a U64Segment: ${e.getMessage}", e)
    }
  }

  private def parse(bytes: Array[Byte], source: String): RowIdSequence =
    U64Segments.parseMessage(bytes, "RowIdSequence", source)(RowIdSequence.parseFrom)

  /** Row offsets are u32, so a fragment cannot have more rows. */
  private val MaxFragmentRows = 1L << 32

  private def totalCount(sequence: RowIdSequence, source: String): Long = {
    var total = 0L
    sequence.getSegmentsList.forEach { segment =>
      val n = U64Segments.count(segment, source)
      // checking each term first keeps the sum from wrapping before the limit sees it
      if (java.lang.Long.compareUnsigned(n, MaxFragmentRows) > 0 || total + n > MaxFragmentRows)
        throw new CorruptFileException(source,
          s"holds more than $MaxFragmentRows row ids, more than a fragment's u32 row offsets can address")
      total += n
    }
    total
  }
}
