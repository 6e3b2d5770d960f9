package sparklance.format.table

import java.util.UUID
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.FieldVector
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.Resources
import sparklance.format.file.v1.FileWriterV1
import sparklance.format.file.v2_0.FileWriter20
import sparklance.format.file.v2_1.FileWriter21
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}
import sparklance.format.skipping.{WrittenZones, Zone, ZoneCollector, ZoneColumn}

/**
 * Writes batches into new data files under `<table>/data/`, one fragment per file, starting a
 * new file after each of `plannedFileRows` in turn, then every `maxRowsPerFile` rows. The
 * fragments it returns have no id yet: the commit assigns ids. Nothing it writes is referenced
 * until a commit names it. For each of `zoneColumns` (top-level fields of `schema`) it gathers
 * the zones of every file while the rows pass ([[zones]]), so a zone map of the new fragments needs
 * no read of them.
 */
final class FragmentWriter(
    storage: Storage,
    tablePath: String,
    schema: LanceSchema,
    dataStorageVersion: StorageVersion,
    allocator: BufferAllocator,
    maxRowsPerFile: Long = FragmentWriter.DefaultMaxRowsPerFile,
    plannedFileRows: Seq[Long] = Nil,
    zoneColumns: Seq[ZoneColumn] = Nil) extends AutoCloseable {
  require(maxRowsPerFile >= 1 && maxRowsPerFile <= FragmentWriter.MaxRowsPerFile,
    s"maxRowsPerFile must be between 1 and ${FragmentWriter.MaxRowsPerFile} (table $tablePath), got $maxRowsPerFile")


  private val finished = ArrayBuffer.empty[DataFragment]
  private val written = ArrayBuffer.empty[String]
  private var current: FragmentWriter.FileWriter = _
  private var currentName: String = _
  private var currentSidecars: FragmentWriter.Sidecars = _
  private var rowsInFile = 0L
  // The first files take the planned row counts (a compaction spreads rows evenly), later ones maxRowsPerFile.
  private val plannedSizes = plannedFileRows.iterator
  private var fileLimit = maxRowsPerFile
  // Per zone column: its position among the vectors written, its field id, and its collector.
  private val collectors = zoneColumns.map { c =>
    val at = schema.fields.indexWhere(_.id == c.fieldId)
    require(at >= 0, s"Zone map ${c.indexName} of $tablePath: field ${c.fieldId} is not a top-level field of the schema written")
    (at, c.fieldId, new ZoneCollector(c.rowsPerZone))
  }
  private val fileZones = Map.newBuilder[String, Map[Int, Seq[Zone]]]

  /** Appends rows; `vectors` follow `schema.fields`. */
  def write(vectors: Seq[FieldVector]): Unit = {
    val n = if (vectors.isEmpty) 0 else vectors.head.getValueCount
    var start = 0
    while (start < n) {
      if (current == null) open()
      // The room left in the file may exceed an Int; the rows left in the batch never do.
      val take = math.min((n - start).toLong, fileLimit - rowsInFile).toInt
      collectors.foreach { case (at, _, c) => c.add(vectors(at), start, take, rowsInFile) }
      if (start == 0 && take == n) current.write(vectors)
      else {
        val slices = vectors.map { v =>
          val tp = v.getTransferPair(allocator); tp.splitAndTransfer(start, take); tp.getTo.asInstanceOf[FieldVector]
        }
        try current.write(slices) finally slices.foreach(_.close())
      }
      rowsInFile += take
      start += take
      if (rowsInFile >= fileLimit) closeFile()
    }
  }

  private def open(): Unit = {
    currentName = UUID.randomUUID().toString.replace("-", "") + ".lance"
    val path = Storage.join(tablePath, s"data/$currentName")
    written += path
    val out = storage.create(path)
    // Blob values too large for the data file go to sidecars next to it (2.2 blob v2 columns).
    currentSidecars = new FragmentWriter.Sidecars(storage, Storage.join(tablePath, s"data/${currentName.stripSuffix(".lance")}"),
      p => written += p)
    current = Resources.closeOnFailure(Seq(out))(FragmentWriter.FileWriter(out, schema, dataStorageVersion, currentSidecars))
    rowsInFile = 0
    fileLimit = if (plannedSizes.hasNext) plannedSizes.next() else maxRowsPerFile
  }

  private def closeFile(): Unit = {
    val result = current.finish()
    current = null
    currentSidecars.close()
    val file = DataFile.newBuilder().setPath(currentName)
      .addAllFields(result.fieldIds.map(Int.box).asJava)
      .addAllColumnIndices(result.columnIndices.map(Int.box).asJava)
      .setFileMajorVersion(dataStorageVersion.major).setFileMinorVersion(dataStorageVersion.minor)
      .setFileSizeBytes(result.sizeBytes)
    finished += DataFragment.newBuilder().addFiles(file).setPhysicalRows(result.numRows).build()
    if (collectors.nonEmpty) fileZones += currentName -> collectors.map { case (_, id, c) => id -> c.endFile() }.toMap
  }

  /** The zones of `zoneColumns` in the files written, once [[finish]] returned. */
  def zones: WrittenZones = WrittenZones(fileZones.result())

  /** The fragments written; an empty input writes no file. */
  def finish(): Seq[DataFragment] = {
    if (current != null) closeFile()
    finished.toSeq
  }

  /** Removes every file this writer created; used when the task fails. */
  def abort(): Unit = {
    if (current != null) try current.finish() catch { case NonFatal(_) => }
    current = null
    if (currentSidecars != null) try currentSidecars.close() catch { case NonFatal(_) => }
    written.foreach(p => try storage.delete(p) catch { case NonFatal(_) => })
  }

  def close(): Unit = if (current != null) abort()
}

object FragmentWriter {
  /** The data file writer of one format version, and what the manifest records of its file. */
  private trait FileWriter {
    def write(vectors: Seq[FieldVector]): Unit
    def finish(): FileWriter21.Result
  }

  /** The blob sidecars of one data file, under `dir`: blob id 1 the packed one, then one per dedicated value. */
  private final class Sidecars(storage: Storage, dir: String, created: String => Unit)
      extends sparklance.format.file.BlobSidecars with AutoCloseable {
    private var packedOut: java.io.OutputStream = _
    private var packedSize = 0L
    private var nextDedicated = 2

    private def create(blobId: Int): java.io.OutputStream = {
      val path = Storage.join(dir, sparklance.format.file.BlobSidecars.fileName(blobId))
      created(path)
      storage.create(path)
    }

    def packed(bytes: Array[Byte]): (Int, Long) = {
      if (packedOut == null) packedOut = create(1)
      val at = packedSize
      packedOut.write(bytes)
      packedSize += bytes.length
      (1, at)
    }

    def dedicated(bytes: Array[Byte]): Int = {
      val id = nextDedicated
      nextDedicated += 1
      val out = create(id)
      try out.write(bytes) finally out.close()
      id
    }

    def close(): Unit = if (packedOut != null) { packedOut.close(); packedOut = null }
  }

  private object FileWriter {
    def apply(out: java.io.OutputStream, schema: LanceSchema, version: StorageVersion,
        sidecars: sparklance.format.file.BlobSidecars): FileWriter = version match {
      case StorageVersion.Legacy => new FileWriter {
        private val w = new FileWriterV1(out, schema)
        def write(vectors: Seq[FieldVector]): Unit = w.write(vectors)
        def finish(): FileWriter21.Result = w.finish()
      }
      case StorageVersion.V2_0 => new FileWriter {
        private val w = new FileWriter20(out, schema)
        def write(vectors: Seq[FieldVector]): Unit = w.write(vectors)
        def finish(): FileWriter21.Result = {
          val r = w.finish()
          FileWriter21.Result(r.numRows, r.sizeBytes, r.fieldIds, r.columnIndices)
        }
      }
      case _ => new FileWriter {
        private val w = new FileWriter21(out, schema, version.minor, sidecars = Some(sidecars))
        def write(vectors: Seq[FieldVector]): Unit = w.write(vectors)
        def finish(): FileWriter21.Result = w.finish()
      }
    }
  }

  /** pylance's default max_rows_per_file. */
  val DefaultMaxRowsPerFile: Long = 1024L * 1024

  /**
   * The most rows one data file (fragment) may hold: Lance counts a fragment's rows as a u32
   * (`physical_rows`, the file's row count) and keeps the row offset in the low 32 bits of a row
   * address, so a file can hold at most u32::MAX rows; Lance refuses larger `max_rows_per_file`.
   */
  val MaxRowsPerFile: Long = 0xFFFFFFFFL

  /**
   * A table's rows per data file, from its config (`max_rows_per_file`), else the default. Tables
   * created before the limit was checked may hold a larger value; no file can hold more than the
   * limit, so it is what they get.
   */
  def maxRowsPerFile(config: Map[String, String]): Long =
    config.get(sparklance.format.commit.Committer.MaxRowsPerFileKey).flatMap(_.toLongOption).filter(_ > 0)
      .map(math.min(_, MaxRowsPerFile)).getOrElse(DefaultMaxRowsPerFile)
}
