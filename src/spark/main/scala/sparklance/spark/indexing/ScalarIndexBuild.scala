package sparklance.spark.indexing

import com.google.protobuf.ByteString
import java.util.UUID
import org.apache.arrow.vector.types.pojo.ArrowType
import org.apache.spark.sql.SparkSession
import scala.util.Using
import sparklance.format.index.{IndexEntry, Indices}
import sparklance.format.index.scalar.{BTreeIndexFiles, BitmapIndexFile, ScalarIndexType}
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.skipping.{BTreeSegment, BitmapSegment, ZoneValues}
import sparklance.format.table.{Dataset, LanceField, Snapshot}
import sparklance.spark.Allocators

/**
 * Segments of BTREE, BITMAP and LABEL_LIST indices (docs/format-scalar-indices.md), written from
 * the rows of some fragments by [[ScalarIndexJob]]; for CREATE INDEX / create_index and for
 * optimize_index, which adds the fragments an index does not cover yet.
 */
final class ScalarIndexBuild(quotedName: String, dataset: Dataset, storageConf: Map[String, String]) {

  /** The field whose values `kind` indexes: the column, or for a LABEL_LIST its arrays' elements; refused where unsuitable. */
  def valueField(kind: ScalarIndexType, field: LanceField, read: Snapshot, where: String): LanceField = {
    val values = if (kind == ScalarIndexType.LabelList) field.arrowType match {
      case _: ArrowType.List | _: ArrowType.LargeList if field.children.size == 1 => field.children.head
      case other => throw new UnsupportedOperationException(
        s"$where: a LABEL_LIST index needs a column of arrays; '${field.name}' is of type $other")
    } else field
    if (!ZoneValues.supports(values)) throw new UnsupportedOperationException(
      s"$where: column '${field.name}' of type ${field.arrowType} cannot have a ${kind.name} index; " +
        "integers, dates, timestamps (microseconds), floating point, strings, binary, booleans and decimals can" +
        (if (kind == ScalarIndexType.LabelList) " (as array elements)" else ""))
    // On such tables BITMAP and LABEL_LIST hold stable row ids, not row addresses: not written here.
    if (read.stableRowIds && kind != ScalarIndexType.BTree) throw new UnsupportedOperationException(
      s"$where: sparklance does not build ${kind.name} indices on tables with stable row ids ($quotedName); BTREE and zonemap it does")
    values
  }

  /**
   * A new segment of index `name` (`kind` on `field`) holding every live row of `fragments` of
   * `read`: its files, written under a fresh uuid, and its manifest entry (not committed).
   */
  def segment(spark: SparkSession, read: Snapshot, field: LanceField, kind: ScalarIndexType, name: String, zoneSize: Int,
      fragments: Seq[DataFragment], where: String): IndexMetadata = {
    val values = valueField(kind, field, read, where)
    val uuid = UUID.randomUUID()
    val files = try Using.resource(Allocators.child(s"${kind.name} index $name of $quotedName")) { allocator =>
      kind match {
        case ScalarIndexType.BTree =>
          val out = new BTreeIndexFiles(dataset.storage, dataset.path, uuid, field.arrowType, zoneSize, allocator)
          ScalarIndexJob.btree(spark, quotedName, read.files, storageConf, fragments, field, out)
          out.finish()
        case _ =>
          val (keys, listNulls) = ScalarIndexJob.bitmaps(spark, quotedName, read.files, storageConf, fragments, field,
            labelList = kind == ScalarIndexType.LabelList)
          Seq(BitmapSegment.LookupFile -> BitmapIndexFile.write(dataset.storage, dataset.path, uuid, values.arrowType, keys, listNulls, allocator))
      }
    } catch { case e: Throwable => dataset.storage.deleteRecursively(Storage.join(dataset.path, s"_indices/$uuid")); throw e }
    // BTREE on stable-row-id tables: still addresses, which pylance marks with index_version 1.
    val indexVersion = if (kind == ScalarIndexType.BTree && read.stableRowIds) 1 else kind.indexVersion
    IndexEntry(uuid, name, field.id, read.version, IndexEntry.fragments(fragments.map(_.getId)), kind.typeUrlSuffix,
      ByteString.EMPTY, indexVersion, files)
  }

  /**
   * What optimize_index does to the scalar index whose segments are `segments`, as pylance's
   * `optimize_indices` does: the fragments no segment covers get a segment of their own (a
   * delta), or, with `numIndicesToMerge` > 0, one segment replaces the newest that many and
   * covers their live fragments and the uncovered ones (all segments with `retrain`). None when
   * there is nothing to do, or on a table where sparklance does not write the index's kind.
   */
  def optimize(spark: SparkSession, read: Snapshot, segments: Seq[IndexMetadata], numIndicesToMerge: Int, retrain: Boolean,
      where: String): Option[ScalarIndexBuild.Optimized] = {
    val kind = ScalarIndexType.of(segments.head).get
    val name = segments.head.getName
    val field = read.schema.fields.find(_.id == segments.head.getFields(0)).getOrElse(throw new IllegalArgumentException(
      s"$where: index '$name' is on field id ${segments.head.getFields(0)}, which the table no longer has; drop it"))
    // Row-id segments (pylance's on stable-row-id tables) cannot be mixed with the addresses written here.
    val addresses = !read.stableRowIds || (kind == ScalarIndexType.BTree && segments.forall(_.getIndexVersion != 0))
    val covered = Indices.coverage(segments, read.fragments.map(_.getId))
    val uncovered = read.fragments.filterNot(f => covered.contains(f.getId.toInt))
    val merged = if (retrain) segments else segments.takeRight(numIndicesToMerge)
    if (!addresses || (uncovered.isEmpty && merged.size <= 1)) None
    else {
      val mergedCoverage = Indices.coverage(merged, read.fragments.map(_.getId))
      val fragments = read.fragments.filter(f => mergedCoverage.contains(f.getId.toInt) || !covered.contains(f.getId.toInt))
      val zoneSize = if (kind != ScalarIndexType.BTree) BTreeIndexFiles.DefaultZoneSize
        else Using.resource(Allocators.child(s"BTREE $name of $quotedName")) { allocator =>
          BTreeSegment.read(dataset.storage, read.files, segments.last, field.arrowType, allocator)
            .map(s => Math.toIntExact(s.batchSize)).getOrElse(BTreeIndexFiles.DefaultZoneSize)
        }
      val added = if (fragments.isEmpty) Nil else Seq(segment(spark, read, field, kind, name, zoneSize, fragments, where))
      Some(ScalarIndexBuild.Optimized(name, uncovered.size, added, merged))
    }
  }
}

object ScalarIndexBuild {
  /** An optimized index: the fragments newly covered, the segments added and removed. */
  final case class Optimized(name: String, uncovered: Long, added: Seq[IndexMetadata], removed: Seq[IndexMetadata])
}
