package sparklance.format.file.v2_0

import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.types.pojo.ArrowType
import scala.collection.mutable.ArrayBuffer
import sparklance.format.file.{ContainerWriter, DictionaryLimit, DictionaryValues, FixedWidth}
import sparklance.format.table.LanceField

/**
 * A dictionary field's column (logical type `dict:<value>:<index>:false`), written as pylance writes
 * it in 2.0: each page a `dictionary` of `nn(flat<index bits>)` indices and the page's items
 * (`binary` for strings and binaries, `nn(flat)` / `sn(flat1, flat)` for fixed-width values), value
 * k of a row being item k, a null row pointing at a null item after the values. Its reader decodes
 * that page into the field's Arrow dictionary type; a plain page it would not. The file's items must
 * fit the index type ([[DictionaryLimit]]).
 */
private[v2_0] final class DictionaryEncoder(field: LanceField, index: ArrowType.Int) extends FieldEncoder {
  private val column = new ColumnPages
  private val valueBits: Option[Int] = FixedWidth.bits(field.arrowType)
  private val indexBytes = index.getBitWidth / 8
  private var values = new DictionaryValues
  private var ids = new Array[Int](1024)
  private var pending = 0
  private val limit = new DictionaryLimit(field.name, index)

  def columns: Seq[ColumnPages] = Seq(column)

  def append(v: FieldVector, from: Int, count: Int): Unit = {
    if (pending + count > ids.length) ids = java.util.Arrays.copyOf(ids, math.max(pending + count, 2 * ids.length))
    var i = 0
    while (i < count) { ids(pending + i) = values.idOfRow(v, from + i); i += 1 }
    pending += count
  }

  def flushPage(out: ContainerWriter): Unit = {
    if (pending > 0) writePage(out, 0, pending)
    values = new DictionaryValues
    pending = 0
  }

  def finish(out: ContainerWriter): Unit = ()

  private def writePage(out: ContainerWriter, from: Int, until: Int): Unit = {
    val (local, order) = DictionaryValues.page(ids, from, until, values.size)
    val hasNull = local.contains(-1)
    val nullItem = order.length
    val numItems = order.length + (if (hasNull) 1 else 0)
    limit.add(values, order, hasNull)
    val buffers = ArrayBuffer.empty[PageBuffer]
    val idx = new ByteBuilder
    idx.growTo(local.length * indexBytes)
    var i = 0
    while (i < local.length) {
      val k = if (local(i) < 0) nullItem.toLong else local(i).toLong
      var b = 0
      while (b < indexBytes) { idx.array(i * indexBytes + b) = (k >>> (8 * b)).toByte; b += 1 }
      i += 1
    }
    buffers += PageBuffer(idx.array, idx.size)
    val indices = ArrayEncodings.noNulls(ArrayEncodings.flat(index.getBitWidth, 0))
    val items = valueBits match {
      case Some(bits) => fixedItems(buffers, order, hasNull, bits / 8)
      case None => variableItems(buffers, order, hasNull)
    }
    column.write(out, buffers.toSeq, (until - from).toLong, ArrayEncodings.dictionary(indices, items, numItems))
  }

  /** `nn(flat)` of the items, or `sn(flat1, flat)` with a null item (zero bytes) at the end. */
  private def fixedItems(buffers: ArrayBuffer[PageBuffer], order: Array[Int], hasNull: Boolean, width: Int) = {
    val n = order.length + (if (hasNull) 1 else 0)
    val data = new Array[Byte](n * width)
    order.indices.foreach(k => System.arraycopy(values.bytes, values.start(order(k)), data, k * width, width))
    if (!hasNull) {
      buffers += PageBuffer(data, data.length)
      ArrayEncodings.noNulls(ArrayEncodings.flat(width * 8, buffers.size - 1))
    } else {
      val validity = new Array[Byte](Bits.bytesFor(n))
      Bits.setOnes(validity, 0, order.length)
      buffers += PageBuffer(validity, validity.length)
      val validityEncoding = ArrayEncodings.flat(1, buffers.size - 1)
      buffers += PageBuffer(data, data.length)
      ArrayEncodings.someNulls(validityEncoding, ArrayEncodings.flat(width * 8, buffers.size - 1))
    }
  }

  /** `binary` of the items; a null item stores its end + the null adjustment, as [[BinaryBuilder]] does. */
  private def variableItems(buffers: ArrayBuffer[PageBuffer], order: Array[Int], hasNull: Boolean) = {
    val bytes = new ByteBuilder
    val ends = new ByteBuilder
    order.foreach { id =>
      val len = values.end(id) - values.start(id)
      bytes.growTo(bytes.size + len)
      System.arraycopy(values.bytes, values.start(id), bytes.array, bytes.size - len, len)
      ends.appendLong(bytes.size.toLong)
    }
    val adjustment = bytes.size + 1L
    if (hasNull) ends.appendLong(bytes.size + adjustment)
    buffers += PageBuffer(ends.array, ends.size)
    val offsets = ArrayEncodings.noNulls(ArrayEncodings.flat(64, buffers.size - 1))
    buffers += PageBuffer(bytes.array, bytes.size)
    ArrayEncodings.binary(offsets, ArrayEncodings.flat(8, buffers.size - 1), adjustment)
  }
}
