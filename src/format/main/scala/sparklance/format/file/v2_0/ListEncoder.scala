package sparklance.format.file.v2_0

import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.complex.{LargeListVector, ListVector}
import sparklance.format.file.ContainerWriter

/**
 * list / large_list: the list column holds `list{nn(flat64) end offsets, adj, num_items}` pages
 * (§2.8) and the items go to the item field's columns. Each list page flushes the items too, so
 * the items of page k start right after those of the pages before it.
 */
private[v2_0] final class ListEncoder(items: FieldEncoder) extends FieldEncoder {
  private val column = new ColumnPages
  private val ends = new ByteBuilder
  private val validity = new BitBuilder
  private var nulls = 0L
  private var pendingItems = 0L

  def columns: Seq[ColumnPages] = column +: items.columns

  def append(v: FieldVector, from: Int, count: Int): Unit = {
    val (offsets, width) = v match {
      case l: ListVector => (l.getOffsetBuffer, 4)
      case l: LargeListVector => (l.getOffsetBuffer, 8)
      case other => throw new IllegalArgumentException(s"Expected a list vector, got ${other.getClass.getSimpleName}")
    }
    def offset(i: Int): Long = if (width == 8) offsets.getLong(i * 8L) else offsets.getInt(i * 4L).toLong
    val start = offset(from)
    val base = pendingItems - start
    var i = from
    while (i < from + count) {
      ends.appendLong(base + offset(i + 1))
      i += 1
    }
    if (v.getNullCount == 0) validity.appendOnes(count)
    else nulls += count - validity.appendFrom(v.getValidityBuffer, from, count)
    val itemCount = offset(from + count) - start
    val child = v match {
      case l: ListVector => l.getDataVector
      case l: LargeListVector => l.getDataVector
    }
    items.append(child, Math.toIntExact(start), Math.toIntExact(itemCount))
    pendingItems += itemCount
  }

  def flushPage(out: ContainerWriter): Unit = {
    val adjustment = pendingItems + 1
    if (nulls > 0) {
      var row = 0
      while (row < validity.size) {
        if (!validity.isSet(row)) ends.setLong(row * 8, ends.getLong(row * 8) + adjustment)
        row += 1
      }
    }
    val buffers = Seq(PageBuffer(ends.array, ends.size))
    column.write(out, buffers, validity.size, ArrayEncodings.list(ArrayEncodings.noNulls(ArrayEncodings.flat(64, 0)), adjustment, pendingItems))
    items.flushPage(out)
    ends.clear(); validity.clear(); nulls = 0; pendingItems = 0
  }

  def finish(out: ContainerWriter): Unit = items.finish(out)
}
