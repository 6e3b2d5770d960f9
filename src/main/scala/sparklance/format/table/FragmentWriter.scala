package sparklance.format.table

import java.util.UUID
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.FieldVector
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.UnsupportedFeatureException
import sparklance.format.file.v2_0.FileWriter20
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}

/**
 * Writes batches into new data files under `<table>/data/`, one fragment per file, starting a
 * new file every `maxRowsPerFile` rows. The fragments it returns have no id yet: the commit
 * assigns ids. Nothing it writes is referenced until a commit names it.
 */
final class FragmentWriter(
    storage: Storage,
    tablePath: String,
    schema: LanceSchema,
    dataStorageVersion: String,
    allocator: BufferAllocator,
    maxRowsPerFile: Long = FragmentWriter.DefaultMaxRowsPerFile) extends AutoCloseable {

  if (dataStorageVersion != "2.0")
    throw new UnsupportedFeatureException(
      s"Writing Lance data files of version $dataStorageVersion is not supported yet (table $tablePath); sparklance writes 2.0")

  private val finished = ArrayBuffer.empty[DataFragment]
  private val written = ArrayBuffer.empty[String]
  private var current: FileWriter20 = _
  private var currentName: String = _
  private var rowsInFile = 0L

  /** Appends rows; `vectors` follow `schema.fields`. */
  def write(vectors: Seq[FieldVector]): Unit = {
    val n = if (vectors.isEmpty) 0 else vectors.head.getValueCount
    var start = 0
    while (start < n) {
      if (current == null) open()
      val take = math.min(n - start, (maxRowsPerFile - rowsInFile).toInt)
      if (start == 0 && take == n) current.write(vectors)
      else {
        val slices = vectors.map { v =>
          val tp = v.getTransferPair(allocator); tp.splitAndTransfer(start, take); tp.getTo.asInstanceOf[FieldVector]
        }
        try current.write(slices) finally slices.foreach(_.close())
      }
      rowsInFile += take
      start += take
      if (rowsInFile >= maxRowsPerFile) closeFile()
    }
  }

  private def open(): Unit = {
    currentName = UUID.randomUUID().toString.replace("-", "") + ".lance"
    val path = Storage.join(tablePath, s"data/$currentName")
    written += path
    current = new FileWriter20(storage.create(path), schema)
    rowsInFile = 0
  }

  private def closeFile(): Unit = {
    val result = current.finish()
    current = null
    val file = DataFile.newBuilder().setPath(currentName)
      .addAllFields(result.fieldIds.map(Int.box).asJava)
      .addAllColumnIndices(result.columnIndices.map(Int.box).asJava)
      .setFileMajorVersion(2).setFileMinorVersion(0)
      .setFileSizeBytes(result.sizeBytes)
    finished += DataFragment.newBuilder().addFiles(file).setPhysicalRows(result.numRows).build()
  }

  /** The fragments written; an empty input writes no file. */
  def finish(): Seq[DataFragment] = {
    if (current != null) closeFile()
    finished.toSeq
  }

  /** Removes every file this writer created; used when the task fails. */
  def abort(): Unit = {
    if (current != null) try current.finish() catch { case NonFatal(_) => }
    current = null
    written.foreach(p => try storage.delete(p) catch { case NonFatal(_) => })
  }

  def close(): Unit = if (current != null) abort()
}

object FragmentWriter {
  /** pylance's default max_rows_per_file. */
  val DefaultMaxRowsPerFile: Long = 1024L * 1024
}
