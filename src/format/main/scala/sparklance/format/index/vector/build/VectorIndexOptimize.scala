package sparklance.format.index.vector.build

import org.apache.arrow.memory.BufferAllocator
import scala.util.Using
import sparklance.format.commit.{CommitRecord, CommitResult, CommitRetries, Statement}
import sparklance.format.index.Indices
import sparklance.format.index.vector.VectorIndexType
import sparklance.format.index.vector.{VectorIndexSegment => OpenedSegment}
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.skipping.ZoneMapSegment
import sparklance.format.table.{Dataset, LanceField, Snapshot}

/**
 * pylance's `optimize_indices` for the IVF indices sparklance builds and reads (format page:
 * docs/format-vector-indices.md, "Optimizing"): per index, the fragments no segment covers are
 * added to it, by the model of its oldest segment (no training), as
 *  - a delta (`num_indices_to_merge` 0, the default): new segment(s) over the uncovered
 *    fragments only, `dataset_version` = the version read;
 *  - a merge (`num_indices_to_merge` n ≥ 1): one segment replacing the newest n segments, over
 *    their fragments still in the table and the uncovered ones, keeping the `dataset_version` of
 *    the oldest it replaces (pylance copies the old segments' rows; this re-encodes the live rows
 *    of those fragments, so deleted and rewritten rows leave the index);
 *  - `retrain`: the whole index trained again on the current rows (a new build replacing every
 *    segment, `num_partitions` from the row count, the other options from the index).
 * An index with nothing uncovered (and, merging, at most one segment to merge) is left alone.
 * pylance 14.0.2 also splits partitions past 4× and joins those under ¼ of the target size
 * (merging every segment then); this does not change the partitions of an index.
 */
object VectorIndexOptimize {
  /**
   * What to do to index `name`: encode `fragments` (with `model`, or train anew when `retrain`)
   * and replace `removed`; `uncovered` = the fragments no segment covered before.
   */
  final case class Step(name: String, field: LanceField, model: Option[VectorModel], retrain: Option[VectorIndexOptions],
      removed: Seq[IndexMetadata], fragments: Seq[DataFragment], uncovered: Seq[DataFragment], datasetVersion: Long) {
    /** A merge (or retrain) writes one segment in place of others; a delta as many as its fragments need. */
    def oneSegment: Boolean = removed.nonEmpty && retrain.isEmpty
  }

  /**
   * The steps for the vector indices `names` of `read` (every vector index when empty; a named
   * index that is not a vector index, or missing, is an error). `numIndicesToMerge` = None is
   * pylance's default (a delta, as pylance makes when no partition needs splitting or joining).
   */
  def plan(storage: Storage, read: Snapshot, names: Seq[String], numIndicesToMerge: Option[Int], retrain: Boolean,
      where: String): Seq[Step] = {
    numIndicesToMerge.filter(_ < 0).foreach(n => throw new IllegalArgumentException(
      s"$where: num_indices_to_merge must be 0 or more, got $n"))
    val all = Indices.parse(read.file.indexSection, s"${read.tablePath} version ${read.version}")
    names.foreach { n =>
      all.find(_.getName == n) match {
        case None => throw new IllegalArgumentException(s"$where: no index named '$n' (indices: " +
          s"${all.map(_.getName).distinct.sorted.mkString(", ")})")
        case Some(i) if !OpenedSegment.isVector(i) => throw new IllegalArgumentException(
          s"$where: index ${Indices.describe(i)} is not a vector index; optimize_index extends IVF, BTREE, BITMAP and LABEL_LIST indices")
        case _ =>
      }
    }
    val vector = all.filter(OpenedSegment.isVector)
    val chosen = vector.map(_.getName).distinct.filter(n => names.isEmpty || names.contains(n))
    chosen.flatMap(name => step(storage, read, vector.filter(_.getName == name), numIndicesToMerge.getOrElse(0), retrain, where))
  }

  private def step(storage: Storage, read: Snapshot, segments: Seq[IndexMetadata], numIndicesToMerge: Int, retrain: Boolean,
      where: String): Option[Step] = {
    val name = segments.head.getName
    val field = read.schema.fields.find(_.id == segments.head.getFields(0)).getOrElse(throw new IllegalArgumentException(
      s"$where: index '$name' is on field id ${segments.head.getFields(0)}, which the table no longer has; drop it"))
    val covered = Indices.coverage(segments, read.fragments.map(_.getId))
    val uncovered = read.fragments.filterNot(f => covered.contains(f.getId.toInt))
    // pylance takes the model of the first segment (the oldest); the segments of one index share it.
    val model = Using.resource(OpenedSegment.open(storage, read, segments.head, field))(VectorModel.of)
    if (retrain) {
      val options = VectorIndexOptions(model.indexType, model.metric,
        numSubVectors = Some(model.numSubVectors).filter(_ => model.indexType == VectorIndexType.IvfPq))
      Some(Step(name, field, None, Some(options), segments, read.fragments, uncovered, read.version))
    } else {
      val merged = segments.takeRight(numIndicesToMerge)
      if (uncovered.isEmpty && merged.size <= 1) None
      else {
        val mergedCoverage = Indices.coverage(merged, read.fragments.map(_.getId))
        val fragments = read.fragments.filter(f => mergedCoverage.contains(f.getId.toInt) || !covered.contains(f.getId.toInt))
        // Merging segments that name only fragments gone from the table would leave nothing to write.
        if (fragments.isEmpty) None
        else Some(Step(name, field, Some(model), None, merged, fragments, uncovered, merged.headOption.fold(read.version)(_.getDatasetVersion)))
      }
    }
  }

  /** Runs the steps in this process (the Spark procedure spreads the encoding over tasks) and commits them as one CreateIndex. */
  def run(dataset: Dataset, read: Snapshot, steps: Seq[Step], segments: Int, allocator: BufferAllocator): Option[CommitResult] =
    if (steps.isEmpty) None
    else {
      val added = steps.flatMap { s =>
        val model = s.model.getOrElse(VectorIndexBuild.train(dataset.storage, read, s.field, s.retrain.get, allocator))
        VectorIndexBuild.groups(s.fragments, if (s.oneSegment) 1 else segments).map(g =>
          VectorIndexSegment.build(dataset.storage, read.files, g, s.field, model, s.name, s.datasetVersion, allocator))
      }
      Some(ZoneMapSegment.commit(dataset, read, added, steps.flatMap(_.removed), CommitRetries(),
        CommitRecord(Statement.OptimizeIndex)))
    }
}
