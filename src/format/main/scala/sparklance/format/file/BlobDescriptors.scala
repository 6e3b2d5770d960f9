package sparklance.format.file

/**
 * The descriptors of a run of rows of a blob column (see `table.BlobEncoding`) as stored: Lance's
 * blob `kind` (see [[BlobLocation.Kind]]; 2.0 and 2.1 files know only inline), `position`, `size`,
 * `blobId` and `uri`, whose meaning depends on the kind: [[location]] decodes them. A NULL row is
 * not `valid`.
 */
final class BlobDescriptors(val count: Int) {
  val valid = new Array[Boolean](count)
  val kind = new Array[Byte](count)
  val position = new Array[Long](count)
  val size = new Array[Long](count)
  val blobId = new Array[Int](count)
  val uri = new Array[String](count)

  /** The bytes of the valid rows, as the descriptors say (a whole external object counts 0). */
  def totalBytes: Long = { var t = 0L; var i = 0; while (i < count) { if (valid(i)) t += size(i); i += 1 }; t }

  /** Where row `i`'s bytes are; None for a NULL. `what` names the row in an error. */
  def location(i: Int, what: => String): Option[BlobLocation] =
    if (!valid(i)) None else Some(BlobLocation.decode(kind(i), position(i), size(i), blobId(i), uri(i), what))
}
