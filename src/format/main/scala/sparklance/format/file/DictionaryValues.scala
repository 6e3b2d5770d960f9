package sparklance.format.file

import java.nio.ByteBuffer
import org.apache.arrow.vector.{BaseLargeVariableWidthVector, BaseVariableWidthVector, FieldVector}
import org.apache.arrow.vector.types.pojo.ArrowType

/**
 * The distinct values of a dictionary field's pending rows (Lance logical type `dict:...`), numbered
 * in order of first appearance; the writers turn them into each page's dictionary. Values are told
 * apart by their bytes, the form pages store them in (so 0.0 and -0.0 stay two items).
 */
private[format] final class DictionaryValues {
  private val ids = new java.util.HashMap[ByteBuffer, Integer]
  private var data = new Array[Byte](256)
  private var ends = new Array[Int](64)
  private var count = 0
  private var tmp = new Array[Byte](64)

  def size: Int = count
  def bytes: Array[Byte] = data
  def start(i: Int): Int = if (i == 0) 0 else ends(i - 1)
  def end(i: Int): Int = ends(i)

  /** The id of the value `src(from until from + len)`, numbering it if it is new. */
  def id(src: Array[Byte], from: Int, len: Int): Int = {
    val known = ids.get(ByteBuffer.wrap(src, from, len))
    if (known != null) known.intValue
    else {
      val at = start(count)
      if (at.toLong + len > Int.MaxValue - 16) throw new IllegalStateException(s"a dictionary of more than ${Int.MaxValue} bytes")
      if (at + len > data.length) data = java.util.Arrays.copyOf(data, math.max(at + len, math.min(Int.MaxValue - 16L, 2L * data.length).toInt))
      System.arraycopy(src, from, data, at, len)
      if (count == ends.length) ends = java.util.Arrays.copyOf(ends, 2 * count)
      ends(count) = at + len
      ids.put(ByteBuffer.wrap(java.util.Arrays.copyOfRange(src, from, from + len)), Integer.valueOf(count))
      count += 1
      count - 1
    }
  }

  /** The id of row `i` of `v` (a vector of the field's value type), -1 for a null. */
  def idOfRow(v: FieldVector, i: Int): Int =
    if (v.isNull(i)) -1
    else v match {
      case s: BaseVariableWidthVector =>
        val o = s.getOffsetBuffer
        bytesAt(v, o.getInt(i * 4L).toLong, o.getInt(i * 4L + 4).toLong)
      case s: BaseLargeVariableWidthVector =>
        val o = s.getOffsetBuffer
        bytesAt(v, o.getLong(i * 8L), o.getLong(i * 8L + 8))
      case _ =>
        val w = FixedWidth.bits(v.getField.getType).filter(_ % 8 == 0).getOrElse(
          throw new IllegalArgumentException(s"Vector '${v.getName}' of ${v.getField.getType} is no dictionary value type")) / 8
        bytesAt(v, i.toLong * w, i.toLong * w + w)
    }

  private def bytesAt(v: FieldVector, from: Long, until: Long): Int = {
    val len = Math.toIntExact(until - from)
    if (len > tmp.length) tmp = new Array[Byte](math.max(len, 2 * tmp.length))
    v.getDataBuffer.getBytes(from, tmp, 0, len)
    id(tmp, 0, len)
  }
}

private[format] object DictionaryValues {
  /**
   * Whether sparklance reads and writes dictionaries of values of `t`: fixed-width values of whole
   * bytes (integers, floating point, dates, times, timestamps, durations, decimals) and strings or
   * binaries. pylance also accepts dictionaries of booleans or nested values; those stay
   * unsupported columns.
   */
  def supports(t: ArrowType): Boolean = t match {
    case _: ArrowType.Utf8 | _: ArrowType.LargeUtf8 | _: ArrowType.Binary | _: ArrowType.LargeBinary => true
    case _: ArrowType.FixedSizeBinary | _: ArrowType.FixedSizeList => false
    case other => FixedWidth.bits(other).exists(b => b >= 8 && b % 8 == 0)
  }

  /** How many distinct values indices of type `index` number (its largest value + 1). */
  def capacity(index: ArrowType.Int): Long = {
    val valueBits = if (index.getIsSigned) index.getBitWidth - 1 else index.getBitWidth
    if (valueBits >= 31) Int.MaxValue.toLong else 1L << valueBits
  }

  /**
   * One page's dictionary for values `[from, until)`: each value's index in it (-1 for a null) and
   * the ids of its items, in order of first appearance.
   */
  def page(ids: Array[Int], from: Int, until: Int, distinct: Int): (Array[Int], Array[Int]) = {
    val local = new Array[Int](distinct)
    java.util.Arrays.fill(local, -1)
    val order = scala.collection.mutable.ArrayBuffer.empty[Int]
    val indices = new Array[Int](until - from)
    var i = from
    while (i < until) {
      val id = ids(i)
      indices(i - from) =
        if (id < 0) -1
        else {
          if (local(id) < 0) { local(id) = order.size; order += id }
          local(id)
        }
      i += 1
    }
    (indices, order.toArray)
  }
}
