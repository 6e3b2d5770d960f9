package sparklance.format.index

import com.google.protobuf.{Any => AnyMessage, ByteString}
import java.nio.ByteBuffer
import java.util.UUID
import org.roaringbitmap.RoaringBitmap
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.proto.TableProtos
import sparklance.format.proto.TableProtos.IndexMetadata

/**
 * The manifest entry of a new index segment, with the fields pylance records for its scalar
 * indices (LANCE-SCALAR-INDICES.md §1): uuid, field, name, the version its rows were read from,
 * the fragments it covers, its details (type URL and message), its index version, the creation
 * time and its files with their exact sizes.
 */
object IndexEntry {
  def apply(uuid: UUID, name: String, fieldId: Int, datasetVersion: Long, fragments: RoaringBitmap, typeUrlSuffix: String,
      details: ByteString, indexVersion: Int, files: Seq[(String, Long)]): IndexMetadata = {
    val id = ByteBuffer.allocate(16).putLong(uuid.getMostSignificantBits).putLong(uuid.getLeastSignificantBits).array()
    val b = IndexMetadata.newBuilder()
      .setUuid(TableProtos.UUID.newBuilder().setUuid(ByteString.copyFrom(id)))
      .addFields(fieldId)
      .setName(name)
      .setDatasetVersion(datasetVersion)
      .setFragmentBitmap(ByteString.copyFrom(PortableBitmaps.toBytes(fragments)))
      .setIndexDetails(AnyMessage.newBuilder().setTypeUrl(s"/$typeUrlSuffix").setValue(details))
      .setIndexVersion(indexVersion)
      .setCreatedAt(System.currentTimeMillis())
    files.foreach { case (path, size) => b.addFiles(TableProtos.IndexFile.newBuilder().setPath(path).setSizeBytes(size)) }
    b.build()
  }

  def fragments(ids: Iterable[Long]): RoaringBitmap = {
    val covered = new RoaringBitmap()
    ids.foreach(id => covered.add(id.toInt))
    covered
  }
}
