package sparklance.format.file

import org.apache.arrow.memory.{ArrowBuf, BufferAllocator}
import org.apache.arrow.memory.util.MemoryUtil
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, ListVector, StructVector}
import scala.jdk.CollectionConverters._
import sparklance.format.Resources

/**
 * Chosen rows of Arrow vectors copied into new ones: the live rows of a range a scan read whole
 * around deleted rows, or the rows a filter keeps. Runs of consecutive rows are copied in bulk
 * (values' bytes at once, offsets shifted), through structs and lists; vector kinds this does not
 * know are copied value by value, as Arrow's transfer pairs copy. Copying value by value was most
 * of a scan's time around 1% deleted rows.
 */
object RowSelection {

  /** Runs of consecutive rows: run i is rows `[starts(i), starts(i) + lengths(i))`; `rows` in all. */
  final class Runs private[RowSelection] (val starts: Array[Int], val lengths: Array[Int], val count: Int, val rows: Int) {
    /** The same runs over `dim` slots a row (the items of fixed-size lists). */
    private[RowSelection] def scaled(dim: Int): Runs =
      new Runs(Array.tabulate(count)(i => Math.multiplyExact(starts(i), dim)), Array.tabulate(count)(i => Math.multiplyExact(lengths(i), dim)),
        count, Math.multiplyExact(rows, dim))
  }

  object Runs {
    /** The runs of `rows(0 until n)`, which ascend. */
    def of(rows: Array[Int], n: Int): Runs = {
      val starts = new Array[Int](math.max(n, 1))
      val lengths = new Array[Int](math.max(n, 1))
      var count = 0
      var i = 0
      while (i < n) {
        if (rows(i) < 0) throw new IllegalArgumentException(s"Row ${rows(i)} asked to copy")
        if (i > 0 && rows(i) <= rows(i - 1)) throw new IllegalArgumentException(s"Rows to copy must ascend: ${rows(i)} after ${rows(i - 1)}")
        if (count > 0 && rows(i) == starts(count - 1) + lengths(count - 1)) lengths(count - 1) += 1
        else { starts(count) = rows(i); lengths(count) = 1; count += 1 }
        i += 1
      }
      new Runs(starts, lengths, count, n)
    }

    /** Runs `[starts(i), starts(i) + lengths(i))` for i below `count`, which ascend apart and hold a row each at least. */
    def of(starts: Array[Int], lengths: Array[Int], count: Int): Runs = {
      var rows = 0L
      var i = 0
      while (i < count) {
        if (lengths(i) <= 0 || starts(i) < 0 || (i > 0 && starts(i) < starts(i - 1).toLong + lengths(i - 1)))
          throw new IllegalArgumentException(s"Run $i of rows to copy (${starts(i)}, ${lengths(i)} rows) is empty, or overlaps or precedes the run before it")
        rows += lengths(i)
        i += 1
      }
      new Runs(starts, lengths, count, Math.toIntExact(rows))
    }
  }

  /** Rows `rows(0 until n)` (ascending) of `from`, as a new vector owned by the caller. */
  def copy(from: FieldVector, rows: Array[Int], n: Int, allocator: BufferAllocator): FieldVector =
    copy(from, Runs.of(rows, n), allocator)

  /** The rows of `runs` of `from`, as a new vector owned by the caller. */
  def copy(from: FieldVector, runs: Runs, allocator: BufferAllocator): FieldVector = copy(Seq(from -> runs), allocator)

  /**
   * The rows of each part's runs of its vector, the parts one after the other, as one new vector
   * owned by the caller. The parts' vectors are of one type (ranges of one column).
   */
  def copy(parts: Seq[(FieldVector, Runs)], allocator: BufferAllocator): FieldVector = {
    require(parts.nonEmpty, "no vectors to copy rows of")
    parts.foreach { case (from, runs) => checkWithin(runs, from.getValueCount) }
    val to = parts.head._1.getTransferPair(allocator).getTo.asInstanceOf[FieldVector]
    Resources.closeOnFailure(Seq(to)) {
      fill(parts.map { case (from, runs) => Part(from, runs) }, to)
      to
    }
  }

  private def checkWithin(runs: Runs, count: Long): Unit =
    if (runs.count > 0) {
      val last = runs.starts(runs.count - 1).toLong + runs.lengths(runs.count - 1)
      if (last > count) throw new IllegalArgumentException(s"Rows ${runs.starts(0)} to ${last - 1} asked of a vector of $count")
    }

  /** Rows `runs` of `from`, copied after those of the parts before it. */
  private final case class Part(from: ValueVector, runs: Runs)

  /**
   * Fills `to`, an empty vector of the parts' type, with the rows of the parts' runs, allocating its
   * buffers once for all of them.
   */
  private def fill(parts: Seq[Part], to: ValueVector): Unit = {
    val rows = Math.toIntExact(parts.map(_.runs.rows.toLong).sum)
    to match {
      case t: BitVector =>
        t.allocateNew(rows)
        var at = 0
        parts.foreach { p =>
          val f = p.from.asInstanceOf[BitVector]
          copyValidity(f, t.getValidityBuffer, p.runs, at)
          copyBits(f.getDataBuffer, t.getDataBuffer, p.runs, at)
          at += p.runs.rows
        }
        t.setValueCount(rows)
      case t: BaseFixedWidthVector if t.getTypeWidth > 0 =>
        t.allocateNew(rows)
        val w = t.getTypeWidth.toLong
        // Runs are checked against the vectors' lengths (`copy`) and `to` holds them all, so their
        // bytes are copied by address, without ArrowBuf's checks: most runs are a few rows long.
        val into = t.getDataBuffer.memoryAddress
        var at = 0
        parts.foreach { p =>
          val f = p.from.asInstanceOf[BaseFixedWidthVector]
          // Items of lists and structs get their runs from their parents' offsets: checked here too.
          checkWithin(p.runs, math.min(f.getValueCount.toLong, f.getDataBuffer.capacity / w))
          copyValidity(f, t.getValidityBuffer, p.runs, at)
          val data = f.getDataBuffer.memoryAddress
          var r = 0
          while (r < p.runs.count) {
            MemoryUtil.copyMemory(data + p.runs.starts(r) * w, into + at * w, p.runs.lengths(r) * w)
            at += p.runs.lengths(r)
            r += 1
          }
        }
        t.setValueCount(rows)
      case t: BaseVariableWidthVector =>
        def offsets(v: ValueVector): Int => Long = { val b = v.asInstanceOf[BaseVariableWidthVector].getOffsetBuffer; i => b.getInt(i * 4L).toLong }
        t.allocateNew(math.max(1L, parts.map(p => dataBytes(p.runs, offsets(p.from))).sum), rows)
        copyVariable(parts, v => v.asInstanceOf[BaseVariableWidthVector].getDataBuffer, offsets, t.getValidityBuffer, t.getDataBuffer,
          (i, v) => t.getOffsetBuffer.setInt(i * 4L, Math.toIntExact(v)))
        t.setLastSet(rows - 1)
        t.setValueCount(rows)
      case t: BaseLargeVariableWidthVector =>
        def offsets(v: ValueVector): Int => Long = { val b = v.asInstanceOf[BaseLargeVariableWidthVector].getOffsetBuffer; i => b.getLong(i * 8L) }
        t.allocateNew(math.max(1L, parts.map(p => dataBytes(p.runs, offsets(p.from))).sum), rows)
        copyVariable(parts, v => v.asInstanceOf[BaseLargeVariableWidthVector].getDataBuffer, offsets, t.getValidityBuffer, t.getDataBuffer,
          (i, v) => t.getOffsetBuffer.setLong(i * 8L, v))
        t.setLastSet(rows - 1)
        t.setValueCount(rows)
      case t: FixedSizeListVector =>
        t.setInitialCapacity(rows)
        t.allocateNew()
        copyValidities(parts, t.getValidityBuffer)
        fill(parts.map(p => Part(p.from.asInstanceOf[FixedSizeListVector].getDataVector, p.runs.scaled(t.getListSize))), t.getDataVector)
        t.setValueCount(rows)
      case t: StructVector =>
        t.setInitialCapacity(rows)
        t.allocateNew()
        copyValidities(parts, t.getValidityBuffer)
        t.getChildrenFromFields.asScala.zipWithIndex.foreach { case (child, k) =>
          fill(parts.map(p => Part(p.from.asInstanceOf[StructVector].getChildrenFromFields.get(k), p.runs)), child)
        }
        t.setValueCount(rows)
      case t: ListVector =>
        fillList(parts, t, t.getValidityBuffer, v => { val b = v.asInstanceOf[ListVector].getOffsetBuffer; i => b.getInt(i * 4L).toLong },
          (i, v) => t.getOffsetBuffer.setInt(i * 4L, Math.toIntExact(v)), _.asInstanceOf[ListVector].getDataVector, t.getDataVector)
        t.setLastSet(rows - 1)
        t.setValueCount(rows)
      case t: LargeListVector =>
        fillList(parts, t, t.getValidityBuffer, v => { val b = v.asInstanceOf[LargeListVector].getOffsetBuffer; i => b.getLong(i * 8L) },
          (i, v) => t.getOffsetBuffer.setLong(i * 8L, v), _.asInstanceOf[LargeListVector].getDataVector, t.getDataVector)
        t.setLastSet(rows - 1)
        t.setValueCount(rows)
      case _ =>
        to.setInitialCapacity(rows)
        to.allocateNew()
        var at = 0
        parts.foreach { p =>
          val pair = p.from.makeTransferPair(to)
          var r = 0
          while (r < p.runs.count) {
            var i = 0
            while (i < p.runs.lengths(r)) { pair.copyValueSafe(p.runs.starts(r) + i, at); at += 1; i += 1 }
            r += 1
          }
        }
        to.setValueCount(rows)
    }
  }

  /** A list vector `to`'s validity, offsets and items (`items`, of which `itemsOf` gives each part's). */
  private def fillList(parts: Seq[Part], to: ValueVector, validity: => ArrowBuf, offsetsOf: ValueVector => Int => Long,
      setOffset: (Int, Long) => Unit, itemsOf: ValueVector => ValueVector, items: => ValueVector): Unit = {
    to.setInitialCapacity(parts.map(_.runs.rows).sum)
    to.allocateNew()
    copyValidities(parts, validity)
    val runs = copyListOffsets(parts, offsetsOf, setOffset)
    fill(parts.zip(runs).map { case (p, r) => Part(itemsOf(p.from), r) }, items)
  }

  /** The bytes the values of `runs` take, from offsets `offset(i)`. */
  private def dataBytes(runs: Runs, offset: Int => Long): Long = {
    var total = 0L
    var r = 0
    while (r < runs.count) { total += offset(runs.starts(r) + runs.lengths(r)) - offset(runs.starts(r)); r += 1 }
    total
  }

  /** The parts' validity, and each run's bytes copied at once with its offsets shifted to where they now start. */
  private def copyVariable(parts: Seq[Part], dataOf: ValueVector => ArrowBuf, offsetsOf: ValueVector => Int => Long,
      validity: ArrowBuf, to: ArrowBuf, setOffset: (Int, Long) => Unit): Unit = {
    var at = 0
    var bytes = 0L
    setOffset(0, 0L)
    parts.foreach { p =>
      copyValidity(p.from, validity, p.runs, at)
      val data = dataOf(p.from)
      val offset = offsetsOf(p.from)
      var r = 0
      while (r < p.runs.count) {
        val start = p.runs.starts(r)
        val base = offset(start)
        val n = p.runs.lengths(r)
        val length = offset(start + n) - base
        to.setBytes(bytes, data, base, length)
        var i = 1
        while (i <= n) { setOffset(at + i, bytes + offset(start + i) - base); i += 1 }
        at += n
        bytes += length
        r += 1
      }
    }
  }

  /** The lists' offsets for the parts' rows; returns each part's runs of items (one per run of rows). */
  private def copyListOffsets(parts: Seq[Part], offsetsOf: ValueVector => Int => Long, setOffset: (Int, Long) => Unit): Seq[Runs] = {
    var at = 0
    var items = 0L
    setOffset(0, 0L)
    parts.map { p =>
      val offset = offsetsOf(p.from)
      val runs = p.runs
      val starts = new Array[Int](math.max(runs.count, 1))
      val lengths = new Array[Int](math.max(runs.count, 1))
      var partItems = 0L
      var r = 0
      while (r < runs.count) {
        val start = runs.starts(r)
        val base = offset(start)
        val n = runs.lengths(r)
        var i = 1
        while (i <= n) { setOffset(at + i, items + offset(start + i) - base); i += 1 }
        starts(r) = Math.toIntExact(base)
        lengths(r) = Math.toIntExact(offset(start + n) - base)
        at += n
        items += lengths(r)
        partItems += lengths(r)
        r += 1
      }
      new Runs(starts, lengths, runs.count, Math.toIntExact(partItems))
    }
  }

  private def copyValidities(parts: Seq[Part], to: ArrowBuf): Unit = {
    var at = 0
    parts.foreach { p => copyValidity(p.from, to, p.runs, at); at += p.runs.rows }
  }

  /** `from`'s validity of the rows of `runs` into `to` (zeroed) from bit `at`: where no row is null, set in bulk. */
  private def copyValidity(from: ValueVector, to: ArrowBuf, runs: Runs, at: Int): Unit =
    if (from.getNullCount == 0) ValidityBits.setRange(to, at, runs.rows)
    else copyBits(from.getValidityBuffer, to, runs, at)

  /** Bits of the rows of `runs` of `from` into `to` (zeroed) from bit `at`, one by one. */
  private def copyBits(from: ArrowBuf, to: ArrowBuf, runs: Runs, at: Int): Unit = {
    var k = at
    var r = 0
    while (r < runs.count) {
      val start = runs.starts(r)
      var i = 0
      while (i < runs.lengths(r)) {
        if (BitVectorHelper.get(from, start + i) != 0) BitVectorHelper.setBit(to, k)
        k += 1
        i += 1
      }
      r += 1
    }
  }
}
