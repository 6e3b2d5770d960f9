package sparklance.format.file

import java.io.OutputStream
import java.nio.{ByteBuffer, ByteOrder}
import sparklance.format.proto.File2Protos.ColumnMetadata

/**
 * Writes the container of a Lance v2 file: page buffers (each padded with 0x48 to a multiple of
 * 64, as pylance does), then the global buffers, column metadata, offset tables and the footer.
 */
final class ContainerWriter(out: OutputStream) {
  private var pos = 0L

  def position: Long = pos

  /** Appends one page buffer and returns its file offset; an empty buffer takes no space. */
  def writeBuffer(bytes: Array[Byte], offset: Int, length: Int): Long = {
    val start = pos
    if (length > 0) {
      out.write(bytes, offset, length)
      pos += length
      pad()
    }
    start
  }

  /** Writes everything after the page buffers, flushes and returns the file size. */
  def finish(globalBuffers: Seq[Array[Byte]], columns: Seq[ColumnMetadata], majorVersion: Int, minorVersion: Int): Long = {
    // pylance refuses global buffers after the first (index payloads) that do not start at a multiple of 64.
    val globalEntries = globalBuffers.zipWithIndex.map { case (b, i) => if (i > 0) pad(); raw(b) }
    val columnMetaStart = pos
    val columnEntries = columns.map(c => raw(c.toByteArray))
    val columnTable = pos
    writeTable(columnEntries)
    val globalTable = pos
    writeTable(globalEntries)
    raw(Footer(columnMetaStart, columnTable, globalTable, globalBuffers.size, columns.size, majorVersion, minorVersion).toBytes)
    out.flush()
    pos
  }

  private def pad(): Unit = {
    val n = ((ContainerWriter.Alignment - pos % ContainerWriter.Alignment) % ContainerWriter.Alignment).toInt
    out.write(ContainerWriter.Padding, 0, n)
    pos += n
  }

  private def raw(bytes: Array[Byte]): (Long, Long) = {
    val start = pos
    out.write(bytes)
    pos += bytes.length
    (start, bytes.length.toLong)
  }

  private def writeTable(entries: Seq[(Long, Long)]): Unit = {
    val b = ByteBuffer.allocate(16 * entries.size).order(ByteOrder.LITTLE_ENDIAN)
    entries.foreach { case (p, l) => b.putLong(p).putLong(l) }
    raw(b.array())
  }
}

object ContainerWriter {
  val Alignment = 64
  private val Padding = Array.fill[Byte](Alignment)(0x48)
}
