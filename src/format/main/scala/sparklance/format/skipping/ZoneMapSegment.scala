package sparklance.format.skipping

import com.google.protobuf.{ByteString, CodedOutputStream}
import java.nio.charset.StandardCharsets.UTF_8
import java.util.UUID
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.{UInt4Vector, UInt8Vector}
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.roaringbitmap.RoaringBitmap
import scala.jdk.CollectionConverters._
import sparklance.format.commit.{CommitFailure, CommitRecord, CommitResult, CommitRetries, Committer, Operation}
import sparklance.format.file.v2_1.FileWriter21
import sparklance.format.index.{IndexEntry, Indices}
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.IndexMetadata
import sparklance.format.table.{BasePaths, Dataset, LanceSchema, Snapshot}

/**
 * The zones of one ZONEMAP index segment, read from `_indices/<uuid>/zonemap.lance`
 * (LANCE-SCALAR-INDICES.md §2.1): one row a zone, columns `min`, `max` (of the column's type),
 * `null_count`, `nan_count`, `fragment_id`, `zone_start`, `zone_length`.
 */
object ZoneMapSegment {
  val TypeUrlSuffix = "lance.table.ZoneMapIndexDetails"
  val FileName = "zonemap.lance"

  /** pylance's default zone size. */
  val DefaultRowsPerZone = 8192L

  def isZoneMap(index: IndexMetadata): Boolean = index.getIndexDetails.getTypeUrl.endsWith(TypeUrlSuffix)

  /**
   * The zone size of new segments of an index: the one its segments record most (`create_index
   * ... rows_per_zone`, or pylance's), else pylance's default.
   */
  def zoneSize(segments: Seq[IndexMetadata]): Long =
    segments.flatMap(rowsPerZone).groupBy(identity).maxByOption(_._2.size).map(_._1).getOrElse(DefaultRowsPerZone)

  /** The zone size a zone map segment records (field 1 of its details), which pylance's refresh builds new zones with. */
  def rowsPerZone(index: IndexMetadata): Option[Long] = {
    val in = index.getIndexDetails.getValue.newCodedInput()
    var found = Option.empty[Long]
    var tag = in.readTag()
    while (tag != 0 && found.isEmpty) {
      if (tag == 8) found = Some(in.readUInt64()) else in.skipField(tag)
      tag = in.readTag()
    }
    found.filter(_ > 0)
  }

  /**
   * The zones of `index`, a zone map on a column of Arrow type `columnType`; None when the file's
   * bounds are of another type, which this reader does not compare against the column.
   */
  def read(storage: Storage, files: BasePaths, index: IndexMetadata, columnType: ArrowType,
      allocator: BufferAllocator): Option[IndexedSeq[Zone]] = {
    val file = IndexFile.open(storage, files, index, FileName)
    try {
      val typed = Seq("min", "max").forall(n => file.schema.field(n).exists(_.arrowType == columnType))
      if (!file.flat || !typed) None
      else file.all(Seq("min", "max", "null_count", "nan_count", "fragment_id", "zone_start", "zone_length"), allocator) {
        case Seq(min, max, nulls, nans, fragment, start, length) => Some((0 until min.getValueCount).map(i =>
          Zone(ZoneValues.long(fragment, i), ZoneValues.long(start, i), ZoneValues.long(length, i),
            ZoneValues.at(min, i), ZoneValues.at(max, i), ZoneValues.long(nulls, i), ZoneValues.long(nans, i))))
      }
    } finally file.close()
  }

  /**
   * Writes `zones` (of a column of Arrow type `columnType`) as the file of a new segment `uuid`,
   * in file format 2.2 as pylance writes its own; returns the file's size.
   */
  private def write(storage: Storage, tablePath: String, uuid: UUID, columnType: ArrowType, zones: Seq[Zone], rowsPerZone: Long,
      allocator: BufferAllocator): Long = {
    def field(name: String, t: ArrowType, nullable: Boolean) = new Field(name, new FieldType(nullable, t, null), null)
    val u32 = new ArrowType.Int(32, false)
    val u64 = new ArrowType.Int(64, false)
    val arrow = new Schema(Seq(field("min", columnType, true), field("max", columnType, true), field("null_count", u32, false),
      field("nan_count", u32, false), field("fragment_id", u64, false), field("zone_start", u64, false),
      field("zone_length", u64, false)).asJava)
    val schema = LanceSchema.fromArrow(arrow).copy(metadata = Map("rows_per_zone" -> rowsPerZone.toString.getBytes(UTF_8)))
    val dir = Storage.join(tablePath, s"_indices/$uuid")
    val writer = new FileWriter21(storage.create(Storage.join(dir, FileName)), schema, minor = 2)
    writer.writeRows(arrow, zones.size, allocator) { vectors =>
      val Seq(min, max, nulls: UInt4Vector, nans: UInt4Vector, fragment: UInt8Vector, start: UInt8Vector, length: UInt8Vector) = vectors
      zones.zipWithIndex.foreach { case (z, i) =>
        ZoneValues.set(min, i, z.min)
        ZoneValues.set(max, i, z.max)
        nulls.setSafe(i, Math.toIntExact(z.nullCount))
        nans.setSafe(i, Math.toIntExact(z.nanCount))
        fragment.setSafe(i, z.fragmentId)
        start.setSafe(i, z.start)
        length.setSafe(i, z.length)
      }
    }
    writer.finish().sizeBytes
  }

  /**
   * The manifest entry of segment `uuid` of the zone map `name` on field `fieldId`, built from the
   * rows of version `datasetVersion`, describing every live row of `fragments`: what pylance
   * records for its own (LANCE-SCALAR-INDICES.md §1, §5.1).
   */
  private def metadata(uuid: UUID, name: String, fieldId: Int, datasetVersion: Long, fragments: RoaringBitmap, rowsPerZone: Long,
      fileSize: Long): IndexMetadata = {
    val details = ByteString.newOutput()
    val out = CodedOutputStream.newInstance(details)
    out.writeUInt64(1, rowsPerZone) // rows_per_zone
    out.writeBool(2, false) // use_seeds: our data files carry no seeds
    out.writeBool(3, false) // has_null_bitmap
    out.flush()
    IndexEntry(uuid, name, fieldId, datasetVersion, fragments, TypeUrlSuffix, details.toByteString, indexVersion = 0,
      Seq(FileName -> fileSize))
  }

  /**
   * A new segment of the zone map `name` on field `fieldId` (Arrow type `columnType`): its file,
   * holding `zones`, written under a fresh uuid, and its manifest entry, covering `fragments`,
   * built from the rows of version `readVersion`.
   */
  def create(storage: Storage, tablePath: String, name: String, fieldId: Int, columnType: ArrowType, zones: Seq[Zone],
      fragments: Iterable[Long], readVersion: Long, rowsPerZone: Long, allocator: BufferAllocator): IndexMetadata = {
    val uuid = UUID.randomUUID()
    val size = write(storage, tablePath, uuid, columnType, zones, rowsPerZone, allocator)
    val entry = metadata(uuid, name, fieldId, readVersion, IndexEntry.fragments(fragments), rowsPerZone, size)
    DataSkipping.remember(tablePath, entry, columnType, zones)
    entry
  }

  /**
   * Commits `added` (new segments) in place of `replaced` on `read`, as a CreateIndex. A commit
   * that surely did not land names nothing in the new segments' directories, so they are deleted;
   * after any other failure (outcome unknown, an interrupt, an Error) they stay.
   */
  def commit(dataset: Dataset, read: Snapshot, added: Seq[IndexMetadata], replaced: Seq[IndexMetadata],
      commitRetries: CommitRetries, record: CommitRecord): CommitResult =
    try new Committer(dataset, commitRetries).commit(Some(read), Operation.CreateIndex(added, replaced), record = Some(record))
    catch {
      case e: Throwable if CommitFailure.leftNothing(e) =>
        added.foreach(discard(dataset.storage, dataset.path, _))
        throw e
    }

  /** Deletes the files of a segment no manifest names (its commit did not land). */
  def discard(storage: Storage, tablePath: String, segment: IndexMetadata): Unit =
    storage.deleteRecursively(Storage.join(tablePath, s"_indices/${Indices.directory(segment)}"))
}
