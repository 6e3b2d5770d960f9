package sparklance.format.file.v2_0

import java.io.EOFException
import sparklance.format.io.InputFile

/** An in-memory file that records the ranges read from it; it reads cheaply as a local file does, or not, as an object store. */
final class BytesInputFile(bytes: Array[Byte], val path: String = "mem://test.lance", override val readsCheaply: Boolean = false)
    extends InputFile {
  val reads = scala.collection.mutable.ArrayBuffer.empty[(Long, Int)]
  var closed = false
  def length: Long = bytes.length
  def read(position: Long, len: Int): Array[Byte] = {
    if (position < 0 || position + len > bytes.length) throw new EOFException(s"$path: $len bytes at $position")
    reads += ((position, len))
    java.util.Arrays.copyOfRange(bytes, position.toInt, position.toInt + len)
  }
  def close(): Unit = closed = true
}

object Hex {
  /** Parses hex digit pairs, ignoring spaces, newlines and `|`. */
  def apply(s: String): Array[Byte] = s.replaceAll("[\\s|]", "").grouped(2).map(Integer.parseInt(_, 16).toByte).toArray
  def ascii(s: String): Array[Byte] = s.getBytes("US-ASCII")
}
