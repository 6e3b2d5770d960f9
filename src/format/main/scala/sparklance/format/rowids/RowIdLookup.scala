package sparklance.format.rowids

import sparklance.format.proto.RowIdProtos.U64Segment

/**
 * A fragment's row ids by row offset, from its sequence's segments: a Range segment answers by
 * arithmetic, any other is decoded when first asked and kept until another one is. A fragment of a
 * million rows in one Range costs no array of a million ids (an 8 MB allocation the JVM's G1
 * collector takes as a humongous object).
 */
final class RowIdLookup private[rowids] (segments: Array[U64Segment], source: String) {
  // The first offset of each segment, and the count of all at the end.
  private val starts: Array[Long] = segments.scanLeft(0L)((at, s) => at + U64Segments.count(s, source))
  private var decodedSegment = -1
  private var decoded: Array[Long] = _

  def count: Long = starts.last

  def idAt(offset: Int): Long = {
    val o = Integer.toUnsignedLong(offset)
    if (o >= count) throw new IllegalArgumentException(s"Row offset $o of $source is past its $count ids")
    val k = java.util.Arrays.binarySearch(starts, o) match { case i if i >= 0 => nonEmptyFrom(i); case i => -i - 2 }
    val segment = segments(k)
    if (segment.hasRange) segment.getRange.getStart + (o - starts(k))
    else {
      if (decodedSegment != k) { decoded = U64Segments.decode(segment, source); decodedSegment = k }
      decoded((o - starts(k)).toInt)
    }
  }

  /** Segment i, or the first non-empty one after it (an offset found at an empty segment's start lies in the next). */
  private def nonEmptyFrom(i: Int): Int = { var k = i; while (starts(k + 1) == starts(k)) k += 1; k }

  /** The ids at `offsets`. */
  def idsAt(offsets: Array[Int]): Array[Long] = {
    val out = new Array[Long](offsets.length)
    var k = 0
    while (k < offsets.length) { out(k) = idAt(offsets(k)); k += 1 }
    out
  }
}
