package sparklance.format.table

import sparklance.format.UnsupportedFeatureException

/** Manifest feature flags (LANCE-FORMAT.md): the bits this library understands, and the check. */
object FeatureFlags {
  val DeletionFiles = 1L
  val StableRowIds = 2L
  val TableConfig = 8L
  /** Files may live under other base paths the manifest lists (shallow clones, branches): see [[BasePaths]]. */
  val BasePaths = 16L
  /**
   * Data files of more than one file format version (docs/format-mixed-versions.md): pylance sets
   * it as soon as a write uses another `data_storage_version` than the table's, and keeps it on
   * every later commit. Readers open each data file by its own version.
   */
  val MixedFileVersions = 256L
  val Known: Long = DeletionFiles | StableRowIds | TableConfig | BasePaths | MixedFileVersions
  /**
   * Managed blobs (docs/format-blobs.md): blob values that are ranges of objects the table keeps
   * apart from its data files (descriptor kind 4). pylance 14 reads them by default, and so does
   * sparklance; a writer must keep those objects alive through cleanup and compaction ("use
   * Managed-aware clients for table maintenance"), which sparklance does not, so it only reads such tables.
   */
  val ManagedBlobs = 16384L
  /** The flags sparklance reads tables with but does not write them with. */
  val ReadOnly: Long = ManagedBlobs

  private val names = Map(1L -> "deletion files", 2L -> "stable row ids", 4L -> "v2 format (deprecated)",
    8L -> "table config", 16L -> "multiple base paths", 32L -> "transaction files disabled",
    64L -> "data overlay files", 128L -> "covering index fields", 256L -> "mixed data file versions",
    16384L -> "managed blobs")

  /** The names of the bits set in `flags`, lowest first (an unnamed bit as its number). */
  def describe(flags: Long): Seq[String] =
    (0 until 64).map(1L << _).filter(b => (flags & b) != 0).map(b => names.getOrElse(b, s"flag $b"))

  /** Fails naming each unknown bit: reading or writing a table whose features we skip could lose data. */
  def check(tablePath: String, version: Long, readerFlags: Long, writerFlags: Long, forWrite: Boolean): Unit = {
    val flags = if (forWrite) readerFlags | writerFlags else readerFlags
    val unknown = flags & ~(if (forWrite) Known else Known | ReadOnly)
    if (unknown != 0) {
      val bits = (0 until 64).map(1L << _).filter(b => (unknown & b) != 0)
        .map(b => s"$b (${names.getOrElse(b, "unknown to sparklance")})")
      throw new UnsupportedFeatureException(
        s"Lance table $tablePath version $version sets feature flag(s) ${bits.mkString(", ")}, which sparklance " +
          s"does not support${if (forWrite && (unknown & ~ReadOnly) == 0) " for writing (it reads such tables)" else ""}; " +
          s"it refuses to ${if (forWrite) "write" else "read"} it rather than misread it")
    }
  }
}
