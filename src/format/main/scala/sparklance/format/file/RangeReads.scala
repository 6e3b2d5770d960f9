package sparklance.format.file

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.FieldVector
import sparklance.format.Resources

/**
 * Scattered rows read as contiguous ranges: rows close together are read as one range and the
 * ones asked for copied out, so a range never spans more than [[RangeReads.MaxSpan]] rows however
 * far apart the rows are.
 */
object RangeReads {
  val MaxSpan = 8192

  /** Rows `rows` (ascending, distinct) as one new vector, reading ranges with `readRange(start, count)`. */
  def rows(rows: Array[Long], allocator: BufferAllocator)(readRange: (Long, Int) => FieldVector): FieldVector = {
    require(rows.nonEmpty, "no rows to read")
    var out: FieldVector = null
    Resources.closeOnFailure(Seq[AutoCloseable](() => if (out != null) out.close())) {
      var i = 0
      while (i < rows.length) {
        val start = rows(i)
        var j = i + 1
        while (j < rows.length && rows(j) - start < MaxSpan) j += 1
        val part = readRange(start, (rows(j - 1) - start + 1).toInt)
        try {
          if (out == null) {
            out = part.getTransferPair(allocator).getTo.asInstanceOf[FieldVector]
            out.setInitialCapacity(rows.length)
            out.allocateNew()
          }
          val copy = part.makeTransferPair(out)
          var k = i
          while (k < j) { copy.copyValueSafe((rows(k) - start).toInt, k); k += 1 }
        } finally part.close()
        i = j
      }
      out.setValueCount(rows.length)
      out
    }
  }
}
