package sparklance.format.file

/**
 * Where a data file being written puts blob values too large to sit in it (2.2 blob v2): a shared
 * "packed" sidecar file and "dedicated" ones, one per value, next to the data file.
 */
trait BlobSidecars {
  /** Appends `bytes` to the packed sidecar; returns its blob id and the value's position in it. */
  def packed(bytes: Array[Byte]): (Int, Long)
  /** Writes `bytes` as a dedicated sidecar of their own; returns its blob id. */
  def dedicated(bytes: Array[Byte]): Int
}

object BlobSidecars {
  /** Values up to this size stay in the data file (as pylance 14 writes them). */
  val MaxInlineBytes: Long = 64L << 10
  /** Values up to this size go to the shared packed sidecar; larger ones get their own. */
  val MaxPackedBytes: Long = 4L << 20

  /** A sidecar file's name: the blob id as 32 binary digits, lowest bit first, then `.blob`. */
  def fileName(blobId: Int): String = (0 until 32).map(b => if (((blobId >>> b) & 1) == 1) '1' else '0').mkString + ".blob"
}
