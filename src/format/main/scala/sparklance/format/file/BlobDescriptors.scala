package sparklance.format.file

/**
 * The descriptors of a run of rows of a blob column (see `table.BlobEncoding`): where each row's
 * bytes are. `kind` is Lance's blob kind: 0 inline (at `position` in the data file itself; the
 * only kind of file formats 2.0 and 2.1), 1 packed (at `position` in the sidecar file `blobId`),
 * 2 dedicated (the whole sidecar file `blobId`), 3 external (`uri`). A NULL row is not `valid`.
 */
final class BlobDescriptors(val count: Int) {
  val valid = new Array[Boolean](count)
  val kind = new Array[Byte](count)
  val position = new Array[Long](count)
  val size = new Array[Long](count)
  val blobId = new Array[Int](count)
  val uri = new Array[String](count)

  /** The bytes of the valid rows, as the descriptors say. */
  def totalBytes: Long = { var t = 0L; var i = 0; while (i < count) { if (valid(i)) t += size(i); i += 1 }; t }
}

object BlobDescriptors {
  val Inline: Byte = 0
  val Packed: Byte = 1
  val Dedicated: Byte = 2
  val External: Byte = 3
}
