package sparklance.spark.indexing

import java.nio.charset.StandardCharsets.UTF_8
import java.util.UUID
import org.apache.spark.sql.SparkSession
import scala.util.Using
import sparklance.format.index.IndexEntry
import sparklance.format.index.text.{TextIndexFiles, TextIndexParams, TextIndexSegment, TextPartitionBuilder}
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.rowids.RowLineage
import sparklance.format.table.{BasePaths, Dataset, LanceField, Snapshot}
import sparklance.hadoop.Storages
import sparklance.spark.Allocators

/**
 * A segment of an INVERTED index in pylance 14.0.2's format (docs/format-inverted-index.md), one
 * partition a Spark task: each task reads the column of its share of the rows (whole fragments
 * or ranges of one), tokenizes, and writes its partition's files; the driver writes
 * `metadata.lance` listing the partitions. BM25 statistics are summed over partitions at query
 * time, so the split changes no score.
 */
object InvertedIndexJob {
  /** A task's rows: offsets `start` until `end` of a fragment. */
  private final case class Piece(fragment: Array[Byte], start: Long, end: Long)

  /**
   * The segment of index `name` over every live row of `fragments` of `read`, in `partitions`
   * partitions (default: the session's parallelism), written under a fresh uuid; its manifest
   * entry, not committed. With `carried` (segments of the index being merged into this one) their
   * partitions are copied in first, as they are: the segment then covers their fragments too, and
   * their documents (deleted rows included) keep counting in the statistics, as in pylance's merge.
   */
  def segment(spark: SparkSession, quotedName: String, dataset: Dataset, read: Snapshot, storageConf: Map[String, String],
      field: LanceField, params: TextIndexParams, name: String, fragments: Seq[DataFragment], partitions: Option[Int],
      carried: Seq[IndexMetadata] = Nil): IndexMetadata = {
    val uuid = UUID.randomUUID()
    val dir = Storage.join(dataset.path, s"_indices/$uuid")
    dataset.storage.mkdirs(dir)
    val count = math.max(1, partitions.getOrElse(spark.sparkContext.defaultParallelism))
    val files: BasePaths = read.files
    val copied = try carry(dataset, read, carried, dir) catch { case e: Throwable => dataset.storage.deleteRecursively(dir); throw e }
    val first = copied.size
    val groups = if (fragments.isEmpty && copied.nonEmpty) Nil else split(fragments, count)
    val fieldBytes = ColumnScan.proto(field)
    val stableRowIds = read.stableRowIds
    val sc = spark.sparkContext
    val previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(s"INVERTED index $name of ${field.name} on $quotedName: ${fragments.size} fragment(s), ${groups.size} partition(s)")
    try {
      val written = try if (groups.isEmpty) Nil else sc.parallelize(groups.zipWithIndex.map { case (g, i) => (g, first + i) },
          groups.size).map { case (pieces, p) =>
        val analyzer = params.analyzer
        val builder = new TextPartitionBuilder(analyzer, params.withPosition)
        val storage = Storages.forPath(files.tablePath, storageConf)
        pieces.foreach { piece =>
          val fragment = DataFragment.parseFrom(piece.fragment)
          // Null: rows are named by their addresses.
          val rowIds = if (!stableRowIds) null else RowLineage.rowIds(storage, files.tablePath, fragment).getOrElse(
            throw new IllegalStateException(s"Fragment ${fragment.getId} of ${files.tablePath} has no row ids"))
          val base = fragment.getId << 32
          ColumnScan.foreachBatch(files, storageConf, fragment, fieldBytes, piece.start, piece.end) { (vector, numRows, offsets) =>
            var i = 0
            while (i < numRows) {
              val offset = offsets(i)
              builder.add(if (rowIds == null) base | Integer.toUnsignedLong(offset) else rowIds(offset), vector, i)
              i += 1
            }
          }
        }
        val out = Using.resource(Allocators.child(s"INVERTED index partition $p of ${files.tablePath}")) { allocator =>
          builder.write(storage, dir, p, allocator)
        }
        (p, out)
      }.collect().toSeq
      catch { case e: Throwable => dataset.storage.deleteRecursively(dir); throw e }
      val nonEmpty = copied ++ written.filter(_._2.nonEmpty).sortBy(_._1)
      val fileSizes = Using.resource(Allocators.child(s"INVERTED index $name of $quotedName")) { allocator =>
        // No document at all: one empty partition, so the segment still names its files.
        val parts = if (nonEmpty.nonEmpty) nonEmpty
          else Seq(0 -> new TextPartitionBuilder(params.analyzer, params.withPosition).write(dataset.storage, dir, 0, allocator, evenIfEmpty = true))
        parts.flatMap(_._2) :+ TextIndexFiles.writeMetadata(dataset.storage, dir, parts.map(_._1), params, allocator)
      }
      val covered = IndexEntry.fragments(fragments.map(_.getId))
      covered.or(sparklance.format.index.Indices.coverage(carried, read.fragments.map(_.getId)))
      IndexEntry(uuid, name, field.id, read.version, covered, InvertedTypeUrl,
        params.details, IndexVersion, fileSizes)
    } finally sc.setJobDescription(previous)
  }

  /**
   * What optimize_index does to the INVERTED index whose segments are `segments`, as pylance
   * 14.0.2's `optimize_indices(num_indices_to_merge=n)` does (n absent: 1, as pylance's default
   * acts on INVERTED indices: new fragments join the newest segment): with n = 0, the live fragments no
   * segment covers get a segment of their own (a delta), tokenized with the index's own settings;
   * with n > 0, one segment replaces the newest n segments (on a table with stable row ids also
   * those covering a fragment with deleted rows, as pylance does) and covers their fragments and the
   * uncovered ones: their partitions copied as they are (deleted rows still counting, as pylance's
   * merge keeps them), the uncovered rows tokenized into partitions after them; on a table with
   * stable row ids, where pylance's merge drops deleted rows, the segment is written anew from the
   * live rows of those fragments. None when there is
   * nothing to do (no uncovered fragment and fewer than two segments to merge). `retrain` is not
   * done for INVERTED indices. Settings sparklance does not write (other tokenizers) are refused by
   * name when the index is `named`, else the index is left as it is; so are segments to merge
   * whose settings differ.
   */
  def optimize(spark: SparkSession, quotedName: String, dataset: Dataset, read: Snapshot, storageConf: Map[String, String],
      segments: Seq[IndexMetadata], numIndicesToMerge: Option[Int], named: Boolean, where: String): Option[ScalarIndexBuild.Optimized] = {
    val name = segments.head.getName
    val covered = sparklance.format.index.Indices.coverage(segments, read.fragments.map(_.getId))
    val uncovered = read.fragments.filterNot(f => covered.contains(f.getId.toInt))
    val newest = segments.takeRight(numIndicesToMerge.getOrElse(1))
    // On a table with stable row ids pylance 14.0.2 also merges every segment covering a fragment
    // with deleted rows (whenever it merges at all), keeping the manifest's order.
    val withDeletions = read.fragments.filter(_.hasDeletionFile).map(_.getId.toInt)
    val merged = if (newest.isEmpty || !read.stableRowIds) newest else segments.filter { s =>
      newest.contains(s) || sparklance.format.index.Indices.coverage(Seq(s), read.fragments.map(_.getId)).toArray.exists(withDeletions.contains)
    }
    if (uncovered.isEmpty && merged.size <= 1) None
    else {
      val field = read.schema.fields.find(_.id == segments.head.getFields(0)).getOrElse(throw new IllegalArgumentException(
        s"$where: index '$name' is on field id ${segments.head.getFields(0)}, which the table no longer has; drop it"))
      val params = try {
        val json = Using.resource(Allocators.child(s"INVERTED index $name of $quotedName")) { allocator =>
          (merged :+ segments.last).distinct.map(s => TextIndexSegment.params(dataset.storage, read.files, read.files.tablePath, s, allocator))
        }
        if (json.distinct.size > 1) throw new IllegalArgumentException(
          s"$where: the segments of index '$name' to merge were built with different settings (${json.distinct.mkString(" and ")})")
        Some(TextIndexParams.fromJson(json.head, s"$where: index '$name'"))
      } catch { case _: sparklance.format.UnsupportedFeatureException if !named => None }
      params.map { p =>
        // Addresses: the merged segments' partitions copied. Stable row ids: pylance's merge drops the
        // deleted rows (the statistics shrink), as a segment written anew from the live rows does.
        val added = if (!read.stableRowIds) segment(spark, quotedName, dataset, read, storageConf, field, p, name, uncovered, None,
            carried = merged)
          else {
            val mergedCoverage = sparklance.format.index.Indices.coverage(merged, read.fragments.map(_.getId))
            segment(spark, quotedName, dataset, read, storageConf, field, p, name,
              read.fragments.filter(f => mergedCoverage.contains(f.getId.toInt)) ++ uncovered, None)
          }
        ScalarIndexBuild.Optimized(name, uncovered.size, Seq(added), merged)
      }
    }
  }

  /** The partitions of `segments` copied into segment directory `dir` as partitions 0, 1, ...: each one's id and files. */
  private def carry(dataset: Dataset, read: Snapshot, segments: Seq[IndexMetadata], dir: String): Seq[(Int, Seq[(String, Long)])] = {
    val sources = Using.resource(Allocators.child(s"INVERTED index segments of ${dataset.path}")) { allocator =>
      segments.flatMap { s =>
        TextIndexSegment.partitionIds(dataset.storage, read.files, read.files.tablePath, s, allocator).map(read.files.indexDir(s) -> _)
      }
    }
    sources.zipWithIndex.map { case ((from, p), to) => to -> TextIndexFiles.copyPartition(dataset.storage, from, p, dir, to) }
  }

  def isInverted(index: IndexMetadata): Boolean = index.getIndexDetails.getTypeUrl == s"/$InvertedTypeUrl"

  /** The type URL (without its leading slash) of an INVERTED index's details. */
  val InvertedTypeUrl = "lance.table.InvertedIndexDetails"
  /** The index version pylance 14.0.2 records for its INVERTED segments (plain and stable-row-id tables alike). */
  val IndexVersion = 2

  /** `fragments` cut into at most `count` groups of about equal physical rows, in order, a fragment split where a group ends. */
  private def split(fragments: Seq[DataFragment], count: Int): Seq[Seq[Piece]] = {
    val total = fragments.map(_.getPhysicalRows).sum
    if (total == 0) return Seq(Nil)
    val per = math.max(1L, (total + count - 1) / count)
    val groups = scala.collection.mutable.ArrayBuffer(scala.collection.mutable.ArrayBuffer.empty[Piece])
    var room = per
    fragments.foreach { f =>
      val bytes = f.toByteArray
      var start = 0L
      while (start < f.getPhysicalRows) {
        if (room == 0) { groups += scala.collection.mutable.ArrayBuffer.empty[Piece]; room = per }
        val take = math.min(room, f.getPhysicalRows - start)
        groups.last += Piece(bytes, start, start + take)
        start += take
        room -= take
      }
    }
    groups.map(_.toSeq).toSeq
  }
}
