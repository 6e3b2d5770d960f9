package sparklance.spark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import scala.jdk.CollectionConverters._
import sparklance.format.deletion.DeletionFiles
import sparklance.format.index.Indices
import sparklance.format.io.Storage
import sparklance.format.table.{Dataset, Snapshot}

/**
 * `SELECT * FROM lance.db.t.fragments`: one row per fragment of the newest version of `db.t`, as
 * Iceberg's `files` table lists data files: its id, data files (paths under the table), deletion
 * file, physical, deleted and live rows, bytes (data files and deletion file) and the indices
 * covering it (by name; a fragment no index of a name covers is read whole by that index's queries).
 */
final class FragmentsTable(tableName: String, dataset: Dataset) extends MetadataTable(tableName, FragmentsTable.Name, FragmentsTable.Schema) {
  override def rows(): Array[InternalRow] = {
    def text(s: String) = UTF8String.fromString(s)
    def texts(values: Seq[String]) = new GenericArrayData(values.map(text).toArray[Any])
    FragmentsTable.describe(dataset.storage, dataset.snapshot()).map { f =>
      InternalRow(f.id, texts(f.files), f.deletionFile.map(text).orNull, f.physicalRows, f.deletedRows, f.rows, f.bytes, texts(f.indices))
    }.toArray
  }
}

object FragmentsTable {
  val Name = "fragments"
  val Schema: StructType = StructType(Seq(
    StructField("fragment_id", LongType, nullable = false),
    StructField("data_files", ArrayType(StringType, containsNull = false), nullable = false),
    StructField("deletion_file", StringType),
    StructField("physical_rows", LongType, nullable = false),
    StructField("deleted_rows", LongType, nullable = false),
    StructField("rows", LongType, nullable = false),
    StructField("size_in_bytes", LongType, nullable = false),
    StructField("indices", ArrayType(StringType, containsNull = false), nullable = false)))

  /** What the fragments table shows of one fragment; paths relative to the table's directory. */
  final case class Fragment(id: Long, files: Seq[String], deletionFile: Option[String], physicalRows: Long,
      deletedRows: Long, bytes: Long, indices: Seq[String]) {
    def rows: Long = physicalRows - deletedRows
  }

  def describe(storage: Storage, snapshot: Snapshot): Seq[Fragment] = {
    val indices = Indices.parse(snapshot.file.indexSection, s"${snapshot.tablePath} version ${snapshot.version}")
    val coverage = indices.map(i => i.getName -> Indices.coverage(i)).collect { case (name, Some(bitmap)) => name -> bitmap }
    def relative(path: String) = path.stripPrefix(snapshot.tablePath).stripPrefix("/")
    // The manifest records each data file's size; files written before it did are asked for theirs.
    def size(path: String, recorded: Long) = if (recorded > 0) recorded else storage.openInput(path).length
    snapshot.fragments.map { f =>
      val files = f.getFilesList.asScala.toSeq
      val dataPaths = files.map(snapshot.files.dataFile)
      val deletion = if (f.hasDeletionFile) Some(snapshot.files.deletionFile(f)) else None
      Fragment(f.getId, dataPaths.map(relative), deletion.map(relative), f.getPhysicalRows,
        DeletionFiles.deletedRows(storage, snapshot.files, f),
        files.zip(dataPaths).map { case (file, path) => size(path, file.getFileSizeBytes) }.sum +
          deletion.map(storage.openInput(_).length).getOrElse(0L),
        coverage.filter(_._2.contains(f.getId.toInt)).map(_._1).distinct.sorted)
    }
  }
}
