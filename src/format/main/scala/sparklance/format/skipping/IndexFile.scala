package sparklance.format.skipping

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.FieldVector
import scala.jdk.CollectionConverters._
import sparklance.format.{CorruptFileException, FileGoneException, Resources}
import sparklance.format.file.DataFileReader
import sparklance.format.index.Indices
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.IndexMetadata
import sparklance.format.table.{BasePaths, LanceSchema}

/**
 * One Lance file of a scalar index segment, `_indices/<uuid>/<name>`, read as a flat table of
 * named columns.
 */
final class IndexFile private (val path: String, reader: DataFileReader) extends AutoCloseable {
  def schema: LanceSchema = reader.schema
  def numRows: Long = reader.numRows
  def flat: Boolean = schema.fields.forall(_.children.isEmpty)
  /** Global buffer `i` (payloads of vector indices: IVF model, PQ codebook). */
  def globalBuffer(i: Int): Array[Byte] = reader.globalBuffer(i)

  /** Rows [from, from + n) of the columns `names`, to `body`, and closed after. */
  def columns[T](names: Seq[String], allocator: BufferAllocator, from: Long, n: Int)(body: Seq[FieldVector] => T): T = {
    val fields = schema.fields
    // A flat file has a column per field; in a 2.1+ file with lists (the full-text index's
    // posting blocks) only leaves have columns, numbered in pre-order.
    val columnOf = (if (flat) fields else schema.allFields.filter(_.children.isEmpty)).map(_.id).zipWithIndex.toMap
    val read = scala.collection.mutable.ArrayBuffer.empty[FieldVector]
    Resources.closeOnFailure(read) {
      names.foreach { name =>
        read += reader.read(fields.find(_.name == name).getOrElse(throw new CorruptFileException(path,
          s"an index file without a '$name' column: ${fields.map(_.name).mkString(", ")}")), columnOf, from, n, allocator)
      }
    }
    try body(read.toSeq) finally Resources.closeAll(read)
  }

  /** Every row of the columns `names`. */
  def all[T](names: Seq[String], allocator: BufferAllocator)(body: Seq[FieldVector] => T): T =
    columns(names, allocator, 0, Math.toIntExact(numRows))(body)

  def close(): Unit = reader.close()
}

object IndexFile {
  /** Opened with the size the manifest records for it, which spares an object store a request. */
  def open(storage: Storage, files: BasePaths, index: IndexMetadata, name: String): IndexFile = {
    val path = Storage.join(files.indexDir(index), name)
    val size = index.getFilesList.asScala.find(_.getPath == name).map(_.getSizeBytes).filter(_ > 0)
    // A cleanup may remove the file under a statement reading an old version: typed, as for data files.
    FileGoneException.guard(files.tablePath, path.stripPrefix(files.tablePath + "/")) {
      new IndexFile(path, DataFileReader.open(size.fold(storage.openInput(path))(storage.openInput(path, _))))
    }
  }
}
