package sparklance.format.file

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.FieldVector
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
   * most `maxBytes` together, one row more at most.
   */
  def rows(rows: Array[Long], allocator: BufferAllocator, maxBytes: Long = Long.MaxValue)(
      readRange: (Long, Int, Long) => FieldVector): FieldVector = {
    require(rows.nonEmpty, "no rows to read")
    var out: FieldVector = null
    Resources.closeOnFailure(Seq[AutoCloseable](() => if (out != null) out.close())) {
      var used = 0L
      var i = 0
      var spent = false
      while (i < rows.length && !spent) {
        val start = rows(i)
        var j = i + 1
        while (j < rows.length && rows(j) - start < MaxSpan) j += 1
        val part = readRange(start, (rows(j - 1) - start + 1).toInt, maxBytes - used)
        try {
          if (out == null) {
            out = part.getTransferPair(allocator).getTo.asInstanceOf[FieldVector]
            out.setInitialCapacity(rows.length)
            out.allocateNew()
          }
          val read = part.getValueCount
          if (maxBytes < Long.MaxValue) used += RowBytes(part, 0, read)
          val copy = part.makeTransferPair(out)
          var k = i
          while (k < j && rows(k) - start < read) { copy.copyValueSafe((rows(k) - start).toInt, k); k += 1 }
          spent = k < j || used >= maxBytes
          i = k
        } finally part.close()
      }
      out.setValueCount(i)
      out
    }
  }
}
