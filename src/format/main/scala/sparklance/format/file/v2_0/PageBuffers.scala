package sparklance.format.file.v2_0

import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.file.ContainerReader
import sparklance.format.proto.Encodings20Protos.Buffer
import sparklance.format.proto.File2Protos.ColumnMetadata

/** `length` bytes of `array` from `offset`. */
private[v2_0] final case class ByteSlice(array: Array[Byte], offset: Int, length: Int)

/**
 * The buffers one page's encoding refers to (§2.2). The page's buffers are fetched together in a
 * single read when they lie close together, which is how pylance writes them.
 */
private[v2_0] final class PageBuffers(container: ContainerReader, column: ColumnMetadata, page: ColumnMetadata.Page,
    where: String) {
  private val count = page.getBufferOffsetsCount
  private lazy val (spanStart, span) = {
    val nonEmpty = (0 until count).filter(page.getBufferSizes(_) > 0)
    if (nonEmpty.isEmpty) (0L, Array.emptyByteArray)
    else {
      val lo = nonEmpty.map(page.getBufferOffsets(_)).min
      val hi = nonEmpty.map(i => page.getBufferOffsets(i) + page.getBufferSizes(i)).max
      val total = nonEmpty.map(page.getBufferSizes(_)).sum
      // Scattered buffers are fetched one by one instead, so a hole in the file is never read.
      if (hi - lo <= total + 64L * nonEmpty.size + 4096) (lo, container.read(lo, hi - lo, s"the buffers of $where"))
      else (-1L, null)
    }
  }

  def apply(b: Buffer): ByteSlice = b.getBufferType match {
    case Buffer.BufferType.page =>
      val i = b.getBufferIndex
      if (i < 0 || i >= count) throw new CorruptFileException(container.path, s"$where refers to page buffer $i, but the page has $count")
      val (position, size) = (page.getBufferOffsets(i), page.getBufferSizes(i))
      if (size == 0) ByteSlice(Array.emptyByteArray, 0, 0)
      else if (span != null) ByteSlice(span, (position - spanStart).toInt, size.toInt)
      else ByteSlice(container.read(position, size, s"page buffer $i of $where"), 0, size.toInt)
    case Buffer.BufferType.column =>
      val i = b.getBufferIndex
      if (i < 0 || i >= column.getBufferOffsetsCount || i >= column.getBufferSizesCount)
        throw new CorruptFileException(container.path, s"$where refers to column buffer $i, which does not exist")
      val bytes = container.read(column.getBufferOffsets(i), column.getBufferSizes(i), s"column buffer $i of $where")
      ByteSlice(bytes, 0, bytes.length)
    case other => throw new UnsupportedFeatureException(
      s"$where of ${container.path} refers to a buffer of type '$other', which Lance 2.0 readers do not support")
  }
}
