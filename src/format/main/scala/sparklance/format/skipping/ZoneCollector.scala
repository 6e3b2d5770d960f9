package sparklance.format.skipping

import org.apache.arrow.memory.ArrowBuf
import org.apache.arrow.memory.util.{ByteFunctionHelpers, MemoryUtil}
import org.apache.arrow.vector._
import scala.collection.mutable.ArrayBuffer

/**
 * Summarizes one column of the rows a writer puts into new data files, batch by batch as they
 * are written, into the zones [[ZoneBuilder]] would compute by reading the files back: zones of
 * `rowsPerZone` rows restarting at each file, bounds in the same order (NaN counted apart and
 * made the `max` of its zone, -0.0 below 0.0). Values are compared in place in the Arrow buffers;
 * only a chunk's bounds become [[ZoneValue]]s, so the cost per row stays a few comparisons.
 */
final class ZoneCollector(rowsPerZone: Long) {
  require(rowsPerZone > 0, s"rows per zone must be positive, got $rowsPerZone")
  private val zones = ArrayBuffer.empty[Zone]
  private var start, rows, nulls, nans = 0L
  private var min, max: Option[ZoneValue] = None

  /**
   * Rows [from, from + count) of `vector`, which a new file holds from row `offset` on (rows of
   * one file arrive in order, after [[endFile]] of the previous one).
   */
  def add(vector: FieldVector, from: Int, count: Int, offset: Long): Unit = {
    var i = from
    val end = from + count
    while (i < end) {
      if (rows == 0) start = offset + (i - from)
      val take = math.min((end - i).toLong, rowsPerZone - rows).toInt
      summarize(vector, i, i + take)
      rows += take
      i += take
      if (rows == rowsPerZone) close()
    }
  }

  /** Ends the current file: its last zone closes; returns the file's zones (fragmentId 0). */
  def endFile(): Seq[Zone] = {
    close()
    val done = zones.toSeq
    zones.clear()
    done
  }

  private def close(): Unit = if (rows > 0) {
    val top = if (nans > 0) Some(ZoneValue.Floating(Double.NaN)) else max.flatMap(ZoneBounds.upper)
    zones += Zone(0L, start, rows, min.map(ZoneBounds.lower), top, nulls, nans)
    rows = 0; nulls = 0; nans = 0; min = None; max = None
  }

  private def bound(low: ZoneValue, high: ZoneValue): Unit = {
    if (min.forall(m => ZoneBuilder.lower(low, m))) min = Some(low)
    if (max.forall(m => ZoneBuilder.lower(m, high))) max = Some(high)
  }

  /** Folds rows [from, end) of `v` into the open zone. */
  private def summarize(v: FieldVector, from: Int, end: Int): Unit = v match {
    case x: BigIntVector => integral(x, from, end)(x.get)
    case x: IntVector => integral(x, from, end)(i => x.get(i).toLong)
    case x: SmallIntVector => integral(x, from, end)(i => x.get(i).toLong)
    case x: TinyIntVector => integral(x, from, end)(i => x.get(i).toLong)
    case x: DateDayVector => integral(x, from, end)(i => x.get(i).toLong)
    case x: TimeStampVector => integral(x, from, end)(x.get)
    case x: Float8Vector => floating(x, from, end)(x.get)
    case x: Float4Vector => floating(x, from, end)(i => x.get(i).toDouble)
    case x: DecimalVector if MemoryUtil.LITTLE_ENDIAN => decimal(x, from, end)
    case x: BaseVariableWidthVector =>
      bytes(x, from, end, x.getDataBuffer, i => x.getStartOffset(i).toLong, i => x.getEndOffset(i).toLong)
    case x: BaseLargeVariableWidthVector =>
      val offsets = x.getOffsetBuffer
      val width = BaseLargeVariableWidthVector.OFFSET_WIDTH.toLong
      bytes(x, from, end, x.getDataBuffer, i => offsets.getLong(i * width), i => offsets.getLong((i + 1) * width))
    case _ =>
      var i = from
      while (i < end) {
        ZoneValues.at(v, i) match {
          case None => nulls += 1
          case Some(value) => bound(value, value)
        }
        i += 1
      }
  }

  private def integral(v: ValueVector, from: Int, end: Int)(get: Int => Long): Unit = {
    var lo = Long.MaxValue
    var hi = Long.MinValue
    var seen = false
    val checkNulls = v.getNullCount > 0
    var i = from
    while (i < end) {
      if (checkNulls && v.isNull(i)) nulls += 1
      else {
        val x = get(i)
        if (x < lo) lo = x
        if (x > hi) hi = x
        seen = true
      }
      i += 1
    }
    if (seen) bound(ZoneValue.Integral(lo), ZoneValue.Integral(hi))
  }

  private def floating(v: ValueVector, from: Int, end: Int)(get: Int => Double): Unit = {
    var lo = Double.NaN
    var hi = Double.NaN
    var seen = false
    val checkNulls = v.getNullCount > 0
    var i = from
    while (i < end) {
      if (checkNulls && v.isNull(i)) nulls += 1
      else {
        val x = get(i)
        if (x.isNaN) nans += 1
        else if (!seen) { lo = x; hi = x; seen = true }
        else {
          // A total order of doubles: -0.0 below 0.0, as ZoneBuilder keeps them.
          if (java.lang.Double.compare(x, lo) < 0) lo = x
          if (java.lang.Double.compare(x, hi) > 0) hi = x
        }
      }
      i += 1
    }
    if (seen) bound(ZoneValue.Floating(lo), ZoneValue.Floating(hi))
  }

  /**
   * 128-bit decimals: the least and greatest unscaled values (one scale for the column), compared as
   * two longs in place; only those two become BigDecimals. A BigDecimal per value (Arrow's
   * `getObject`) took 6% of a 10M-row append's CPU for one decimal column.
   */
  private def decimal(v: DecimalVector, from: Int, end: Int): Unit = {
    val address = v.getDataBuffer.memoryAddress
    val width = DecimalVector.TYPE_WIDTH.toLong
    var lo, hi = -1
    var loHigh, loLow, hiHigh, hiLow = 0L
    val checkNulls = v.getNullCount > 0
    var i = from
    while (i < end) {
      if (checkNulls && v.isNull(i)) nulls += 1
      else {
        // Little-endian two's complement: the low 8 bytes unsigned, the high 8 signed.
        val low = MemoryUtil.getLong(address + i * width)
        val high = MemoryUtil.getLong(address + i * width + 8)
        if (lo < 0) { lo = i; hi = i; loHigh = high; loLow = low; hiHigh = high; hiLow = low }
        else {
          if (high < loHigh || (high == loHigh && java.lang.Long.compareUnsigned(low, loLow) < 0)) { lo = i; loHigh = high; loLow = low }
          if (high > hiHigh || (high == hiHigh && java.lang.Long.compareUnsigned(low, hiLow) > 0)) { hi = i; hiHigh = high; hiLow = low }
        }
      }
      i += 1
    }
    if (lo >= 0) bound(ZoneValue.Decimal(v.getObject(lo)), ZoneValue.Decimal(v.getObject(hi)))
  }

  /**
   * Strings and binary: the least and greatest values as unsigned bytes, compared in the data
   * buffer. A value's first 8 bytes, read as one number, order it against the least and greatest
   * so far; the bytes are compared whole only where those numbers tie (two comparisons of each value
   * through Arrow's checked `compare` were a zone map column's whole cost in an append's profile).
   */
  private def bytes(v: ValueVector, from: Int, end: Int, data: ArrowBuf, startOf: Int => Long, endOf: Int => Long): Unit = {
    var lo, hi = -1
    var loStart, loEnd, hiStart, hiEnd, loFirst, hiFirst = 0L
    val checkNulls = v.getNullCount > 0
    var i = from
    while (i < end) {
      if (checkNulls && v.isNull(i)) nulls += 1
      else {
        val s = startOf(i)
        val e = endOf(i)
        val first = ZoneCollector.firstEight(data, s, e)
        if (lo < 0) { lo = i; hi = i; loStart = s; loEnd = e; hiStart = s; hiEnd = e; loFirst = first; hiFirst = first }
        else {
          var toLo = java.lang.Long.compareUnsigned(first, loFirst)
          if (toLo == 0) toLo = ZoneCollector.compare(data, s, e, loStart, loEnd)
          if (toLo < 0) { lo = i; loStart = s; loEnd = e; loFirst = first }
          var toHi = java.lang.Long.compareUnsigned(first, hiFirst)
          if (toHi == 0) toHi = ZoneCollector.compare(data, s, e, hiStart, hiEnd)
          if (toHi > 0) { hi = i; hiStart = s; hiEnd = e; hiFirst = first }
        }
      }
      i += 1
    }
    if (lo >= 0) {
      // Only a long value's head: the zone keeps a bound cut from it (ZoneBounds), and comparing heads
      // orders values as comparing them whole does, or ties values whose bounds are the same.
      def copy(i: Int): ZoneValue = {
        val s = startOf(i)
        val out = new Array[Byte](Math.toIntExact(math.min(endOf(i) - s, ZoneBounds.MaxBytes + 1L)))
        data.getBytes(s, out)
        ZoneValue.Bytes(out)
      }
      bound(copy(lo), copy(hi))
    }
  }
}

object ZoneCollector {
  /**
   * Bytes [aStart, aEnd) against [bStart, bEnd) of `buf`, as unsigned bytes, a prefix first.
   * Arrow's comparison checks the bounds once and compares eight bytes a step; a loop of
   * `getByte` checked the buffer's bounds and reference count for every byte: those checks were
   * the top frames of a MERGE's profile, gathering the zones of its new rows' string column.
   */
  private def compare(buf: ArrowBuf, aStart: Long, aEnd: Long, bStart: Long, bEnd: Long): Int =
    ByteFunctionHelpers.compare(buf, aStart, aEnd, buf, bStart, bEnd)

  /**
   * The first 8 bytes of [start, end) of `buf` as an unsigned number, big-endian, the bytes past a
   * shorter value's end taken as 0: when these numbers of two values differ, they order the values as
   * comparing them byte by byte does (a value padded with zeros is never above its extensions);
   * when they are equal, the values must be compared whole.
   */
  private def firstEight(buf: ArrowBuf, start: Long, end: Long): Long = {
    val address = buf.memoryAddress + start
    if (end - start >= 8) {
      val x = MemoryUtil.getLong(address)
      if (MemoryUtil.LITTLE_ENDIAN) java.lang.Long.reverseBytes(x) else x
    } else {
      var x = 0L
      var k = 0
      while (k < end - start) { x |= (MemoryUtil.getByte(address + k) & 0xffL) << (56 - 8 * k); k += 1 }
      x
    }
  }
}
