package sparklance.format.skipping

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.types.pojo.ArrowType
import scala.jdk.CollectionConverters._
import sparklance.format.{CorruptFileException, Resources}
import sparklance.format.file.DataFileReader
import sparklance.format.index.Indices
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.IndexMetadata

/**
 * The zones of one ZONEMAP index segment, read from `_indices/<uuid>/zonemap.lance`
 * (LANCE-SCALAR-INDICES.md §2.1): one row a zone, columns `min`, `max` (of the column's type),
 * `null_count`, `nan_count`, `fragment_id`, `zone_start`, `zone_length`.
 */
object ZoneMapSegment {
  val TypeUrlSuffix = "lance.table.ZoneMapIndexDetails"
  val FileName = "zonemap.lance"

  def isZoneMap(index: IndexMetadata): Boolean = index.getIndexDetails.getTypeUrl.endsWith(TypeUrlSuffix)

  /**
   * The zones of `index`, a zone map on a column of Arrow type `columnType`; None when the file's
   * bounds are of another type, which this reader does not compare against the column.
   */
  def read(storage: Storage, tablePath: String, index: IndexMetadata, columnType: ArrowType,
      allocator: BufferAllocator): Option[IndexedSeq[Zone]] = {
    val file = index.getFilesList.asScala.find(_.getPath == FileName)
    val path = Storage.join(tablePath, s"_indices/${Indices.directory(index)}/$FileName")
    val input = file.filter(_.getSizeBytes > 0).fold(storage.openInput(path))(f => storage.openInput(path, f.getSizeBytes))
    val reader = DataFileReader.open(input)
    try {
      val fields = reader.schema.fields
      def field(name: String) = fields.find(_.name == name).getOrElse(
        throw new CorruptFileException(path, s"a zone map file without a '$name' column: ${fields.map(_.name).mkString(", ")}"))
      if (fields.exists(_.children.nonEmpty) || field("min").arrowType != columnType || field("max").arrowType != columnType) None
      else {
        // Every top-level field is a leaf here, so the i-th field is the i-th column.
        val columnOf = fields.map(_.id).zipWithIndex.toMap
        val n = Math.toIntExact(reader.numRows)
        val names = Seq("min", "max", "null_count", "nan_count", "fragment_id", "zone_start", "zone_length")
        val vectors = names.map(name => reader.read(field(name), columnOf, 0, n, allocator))
        try {
          val Seq(min, max, nulls, nans, fragment, start, length) = vectors
          Some((0 until n).map(i => Zone(ZoneValues.long(fragment, i), ZoneValues.long(start, i), ZoneValues.long(length, i),
            ZoneValues.at(min, i), ZoneValues.at(max, i), ZoneValues.long(nulls, i), ZoneValues.long(nans, i))))
        } finally Resources.closeAll(vectors)
      }
    } finally reader.close()
  }
}
