package sparklance.format.file

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.FieldVector
import scala.collection.mutable.ArrayBuffer
import sparklance.format.Resources

/**
 * Scattered rows read as contiguous ranges: rows close together are read as one range and the
 * ones asked for copied out, so a range never spans more than [[RangeReads.MaxSpan]] rows however
 * far apart the rows are. Ranges are read within a byte budget: a range read may hold fewer rows
 * than asked for, and then the rows read end there.
 */
object RangeReads {
  val MaxSpan = 8192

  /**
   * The first of rows `rows` (ascending, distinct) as one new vector, reading ranges with
   * `readRange(start, count, maxBytes)`, which may return fewer than `count` rows (one at least)
   * where more would take over `maxBytes` (see [[DataFileReader.read]]); the ranges read take at
   * most `maxBytes` together, one row more at most. The ranges' rows are copied out in runs
   * ([[RowSelection]]), into one vector at once: Arrow's copy value by value refuses some nested
   * types (a large list inside a list).
   */
  def rows(rows: Array[Long], allocator: BufferAllocator, maxBytes: Long = Long.MaxValue, maxSpan: Int = MaxSpan)(
      readRange: (Long, Int, Long) => FieldVector): FieldVector = {
    require(maxSpan >= 1, s"a span of $maxSpan rows")
    require(rows.nonEmpty, "no rows to read")
    // The ranges read are kept until their rows are copied, at once: they take at most `maxBytes`.
    val read = ArrayBuffer.empty[FieldVector]
    val chosen = ArrayBuffer.empty[RowSelection.Runs]
    try {
      var used = 0L
      var i = 0
      var spent = false
      while (i < rows.length && !spent) {
        val start = rows(i)
        var j = i + 1
        while (j < rows.length && rows(j) - start < maxSpan) j += 1
        val part = readRange(start, (rows(j - 1) - start + 1).toInt, maxBytes - used)
        read += part
        val count = part.getValueCount
        val local = new Array[Int](j - i)
        var k = i
        while (k < j && rows(k) - start < count) { local(k - i) = (rows(k) - start).toInt; k += 1 }
        chosen += RowSelection.Runs.of(local, k - i)
        if (maxBytes < Long.MaxValue) used += RowBytes(part, 0, count)
        spent = k < j || used >= maxBytes
        i = k
      }
      RowSelection.copy(read.toSeq.zip(chosen), allocator)
    } finally Resources.closeAll(read)
  }
}
