package sparklance.format.index.vector.build

import sparklance.format.index.IndexEntry
import sparklance.format.index.vector.VectorIndexType
import java.util.UUID
import org.apache.arrow.memory.BufferAllocator
import org.roaringbitmap.RoaringBitmap
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.proto.VectorIndexProtos.{FlatCompression, ProductQuantization, ScalarQuantization, VectorIndexDetails}
import sparklance.format.table.{BasePaths, LanceField}

/**
 * One segment of an IVF vector index over some fragments, built with a trained [[VectorModel]]:
 * every live vector of those fragments assigned to its partition and encoded, both files written
 * under a fresh uuid, and the manifest entry pylance records for its own (LANCE-VECTOR-INDICES.md
 * §1). Segments of one build share the model and cover disjoint fragments, as pylance's
 * distributed build makes them (§8); one CreateIndex commits them together.
 */
object VectorIndexSegment {
  val TypeUrlSuffix = "lance.index.pb.VectorIndexDetails"

  def isVector(index: IndexMetadata): Boolean = index.getIndexDetails.getTypeUrl.endsWith(TypeUrlSuffix)

  /** The segment's files and entry; `readVersion` = the version whose fragments these are. */
  def build(storage: Storage, files: BasePaths, fragments: Seq[DataFragment], field: LanceField, model: VectorModel,
      name: String, readVersion: Long, allocator: BufferAllocator): IndexMetadata = {
    val rows = new PartitionedRows(model.numPartitions, model.bytesPerRow)
    fragments.foreach { fragment =>
      VectorColumn.foreach(storage, files, fragment, field, allocator) { (id, vector, from) =>
        // pylance leaves rows holding NaN or infinity out of the index (filter_nan).
        if ((0 until model.dim).forall(j => java.lang.Float.isFinite(vector(from + j)))) {
          val p = model.prepareAndAssign(vector, from)
          val (payload, at) = rows.append(p, id)
          model.encode(vector, from, p, payload, at)
        }
      }
    }
    val uuid = UUID.randomUUID()
    val written = IvfSegmentFiles.write(storage, Storage.join(files.tablePath, s"_indices/$uuid"), model, rows, allocator)
    val covered = new RoaringBitmap()
    fragments.foreach(f => covered.add(Math.toIntExact(f.getId)))
    metadata(uuid, name, field.id, readVersion, covered, model, written)
  }

  /** The details pylance writes (§1): the metric (omitted for l2, proto3's default) and the compression. */
  def details(model: VectorModel): VectorIndexDetails = {
    val b = VectorIndexDetails.newBuilder().setMetricType(model.metric.proto)
    model.indexType match {
      case VectorIndexType.IvfFlat => b.setFlat(FlatCompression.getDefaultInstance)
      case VectorIndexType.IvfPq => b.setPq(ProductQuantization.newBuilder().setNumBits(8).setNumSubVectors(model.numSubVectors))
      case VectorIndexType.IvfSq => b.setSq(ScalarQuantization.newBuilder().setNumBits(8))
    }
    b.build()
  }

  private def metadata(uuid: UUID, name: String, fieldId: Int, datasetVersion: Long, fragments: RoaringBitmap, model: VectorModel,
      written: Seq[(String, Long)]): IndexMetadata = {
    IndexEntry(uuid, name, fieldId, datasetVersion, fragments, TypeUrlSuffix, details(model).toByteString, indexVersion = 1, written)
  }
}
