package sparklance.format.file

import java.nio.{ByteBuffer, ByteOrder}
import java.nio.charset.StandardCharsets.US_ASCII
import sparklance.format.CorruptFileException

/** The fixed 40-byte tail of every Lance v2 data file (LANCE-FILE-2.0.md §1.1). */
final case class Footer(
    columnMetaStart: Long,
    columnMetaOffsetsPosition: Long,
    globalBufferOffsetsPosition: Long,
    numGlobalBuffers: Int,
    numColumns: Int,
    majorVersion: Int,
    minorVersion: Int) {

  def toBytes: Array[Byte] = {
    val b = ByteBuffer.allocate(Footer.Size).order(ByteOrder.LITTLE_ENDIAN)
    b.putLong(columnMetaStart).putLong(columnMetaOffsetsPosition).putLong(globalBufferOffsetsPosition)
    b.putInt(numGlobalBuffers).putInt(numColumns)
    b.putShort(majorVersion.toShort).putShort(minorVersion.toShort).put(Footer.Magic)
    b.array()
  }
}

object Footer {
  val Size = 40
  private val Magic = "LANC".getBytes(US_ASCII)

  /** Parses the footer held in `bytes(offset until offset + 40)`. */
  def parse(bytes: Array[Byte], offset: Int, path: String): Footer = {
    val magic = java.util.Arrays.copyOfRange(bytes, offset + 36, offset + 40)
    if (!java.util.Arrays.equals(magic, Magic))
      throw new CorruptFileException(path,
        s"not a Lance file: the last 4 bytes are ${magic.map(b => f"${b & 0xff}%02x").mkString(" ")}, not \"LANC\"")
    val b = ByteBuffer.wrap(bytes, offset, Size).order(ByteOrder.LITTLE_ENDIAN)
    val f = Footer(b.getLong, b.getLong, b.getLong, unsignedCount(b.getInt, "global buffer", path),
      unsignedCount(b.getInt, "column", path), b.getShort & 0xffff, b.getShort & 0xffff)
    if (f.columnMetaStart < 0 || f.columnMetaOffsetsPosition < 0 || f.globalBufferOffsetsPosition < 0)
      throw new CorruptFileException(path, s"footer positions out of range: $f")
    f
  }

  // Counts above 2^31 cannot describe a real file; reading them as negative ints would hide that.
  private def unsignedCount(v: Int, what: String, path: String): Int =
    if (v < 0) throw new CorruptFileException(path, s"footer claims ${v & 0xffffffffL} ${what}s") else v
}
