package sparklance.format.table

import java.io.ByteArrayOutputStream
import java.nio.{ByteBuffer, ByteOrder}
import sparklance.format.CorruptFileException
import sparklance.format.proto.TableProtos.Manifest
import sparklance.format.proto.TransactionProtos.Transaction

/**
 * A manifest as stored: the Manifest message plus the raw index section, which we never
 * interpret but carry forward so that a user's indices survive our commits.
 */
final case class ManifestFile(manifest: Manifest, indexSection: Option[Array[Byte]])

/** The manifest file layout: [index section][transaction][manifest] + 16-byte tail (LANCE-FORMAT.md). */
object ManifestFile {
  private val Magic = "LANC".getBytes("US-ASCII")
  private val TailSize = 16

  def decode(path: String, bytes: Array[Byte]): ManifestFile = {
    def corrupt(detail: String) = new CorruptFileException(path, detail)
    if (bytes.length < TailSize + 4) throw corrupt(s"only ${bytes.length} bytes, too short for a manifest")
    if (!java.util.Arrays.equals(bytes.slice(bytes.length - 4, bytes.length), Magic))
      throw corrupt("missing LANC magic at the end")
    val le = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN)
    val pos = le.getLong(bytes.length - TailSize)
    if (pos < 0 || pos > bytes.length - TailSize - 4) throw corrupt(s"manifest position $pos out of range")
    val len = Integer.toUnsignedLong(le.getInt(pos.toInt))
    if (len != bytes.length - pos - 4 - TailSize)
      throw corrupt(s"manifest length $len does not match the file (expected ${bytes.length - pos - 4 - TailSize})")
    val manifest =
      try Manifest.parseFrom(ByteBuffer.wrap(bytes, pos.toInt + 4, len.toInt))
      catch { case e: com.google.protobuf.InvalidProtocolBufferException => throw new CorruptFileException(path, "undecodable manifest", e) }
    val index = if (!manifest.hasIndexSection) None else Some(section(path, bytes, manifest.getIndexSection, pos))
    ManifestFile(manifest, index)
  }

  private def section(path: String, bytes: Array[Byte], at: Long, end: Long, what: String = "index section"): Array[Byte] = {
    if (at < 0 || at + 4 > end) throw new CorruptFileException(path, s"$what offset $at out of range")
    val len = Integer.toUnsignedLong(ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getInt(at.toInt))
    if (at + 4 + len > end) throw new CorruptFileException(path, s"$what of $len bytes at $at overruns the manifest")
    java.util.Arrays.copyOfRange(bytes, at.toInt + 4, (at + 4 + len).toInt)
  }

  /**
   * The inline copy of the transaction that created this manifest (field 23, or the deprecated
   * field 21), if the file carries one. `bytes` is the whole manifest file.
   */
  def inlineTransaction(path: String, bytes: Array[Byte]): Option[Transaction] = {
    val m = decode(path, bytes).manifest
    val at = if (m.hasTransactionSection) Some(m.getTransactionSection)
      else if (m.hasDeprecatedTransactionSection) Some(m.getDeprecatedTransactionSection) else None
    at.map { offset =>
      val pos = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getLong(bytes.length - TailSize)
      val raw = section(path, bytes, offset, pos, "transaction section")
      try Transaction.parseFrom(raw)
      catch { case e: com.google.protobuf.InvalidProtocolBufferException => throw new CorruptFileException(path, "undecodable transaction section", e) }
    }
  }

  /** Lays out the file; sets the manifest's section offsets to where the sections land. */
  def encode(manifest: Manifest, indexSection: Option[Array[Byte]], transaction: Option[Transaction]): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    def lengthPrefixed(b: Array[Byte]): Long = {
      val at = out.size().toLong
      out.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(b.length).array())
      out.write(b)
      at
    }
    val m = manifest.toBuilder.clearIndexSection().clearTransactionSection().clearDeprecatedTransactionSection()
    indexSection.foreach(b => m.setIndexSection(lengthPrefixed(b)))
    transaction.foreach(t => m.setTransactionSection(lengthPrefixed(t.toByteArray)))
    val manifestPos = lengthPrefixed(m.build().toByteArray)
    val tail = ByteBuffer.allocate(TailSize).order(ByteOrder.LITTLE_ENDIAN)
    tail.putLong(manifestPos).putShort(0).putShort(2).put(Magic)
    out.write(tail.array())
    out.toByteArray
  }
}
