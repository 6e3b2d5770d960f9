package sparklance.format.file.v2_0

import org.apache.arrow.vector.FieldVector
import scala.collection.mutable.ArrayBuffer
import sparklance.format.file.ContainerWriter

/** A field whose column holds its values: primitives, strings, binary, fixed-size lists. */
private[v2_0] final class LeafEncoder(values: ValueBuilder) extends FieldEncoder {
  private val column = new ColumnPages
  private var pending = 0L

  def columns: Seq[ColumnPages] = Seq(column)

  def append(v: FieldVector, from: Int, count: Int): Unit = {
    values.append(v, from, count)
    pending += count
  }

  def flushPage(out: ContainerWriter): Unit = {
    val buffers = ArrayBuffer.empty[PageBuffer]
    val encoding = values.encode(buffers)
    column.write(out, buffers.toSeq, pending, encoding)
    values.reset()
    pending = 0
  }

  def finish(out: ContainerWriter): Unit = ()
}
