package sparklance.spark.indexing

import java.nio.charset.StandardCharsets.UTF_8
import java.util.UUID
import org.apache.spark.sql.SparkSession
import scala.util.Using
import sparklance.format.index.IndexEntry
import sparklance.format.index.text.{TextIndexFiles, TextIndexParams, TextPartitionBuilder}
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
   * entry, not committed.
   */
  def segment(spark: SparkSession, quotedName: String, dataset: Dataset, read: Snapshot, storageConf: Map[String, String],
      field: LanceField, params: TextIndexParams, name: String, fragments: Seq[DataFragment], partitions: Option[Int]): IndexMetadata = {
    val uuid = UUID.randomUUID()
    val dir = Storage.join(dataset.path, s"_indices/$uuid")
    dataset.storage.mkdirs(dir)
    val count = math.max(1, partitions.getOrElse(spark.sparkContext.defaultParallelism))
    val groups = split(fragments, count)
    val files: BasePaths = read.files
    val fieldBytes = ColumnScan.proto(field)
    val stableRowIds = read.stableRowIds
    val sc = spark.sparkContext
    val previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(s"INVERTED index $name of ${field.name} on $quotedName: ${fragments.size} fragment(s), ${groups.size} partition(s)")
    try {
      val written = try sc.parallelize(groups.zipWithIndex, math.max(1, groups.size)).map { case (pieces, p) =>
        val analyzer = params.analyzer
        val builder = new TextPartitionBuilder(analyzer, params.withPosition)
        val storage = Storages.forPath(files.tablePath, storageConf)
        pieces.foreach { piece =>
          val fragment = DataFragment.parseFrom(piece.fragment)
          val rowIds = if (!stableRowIds) None else Some(RowLineage.rowIds(storage, files.tablePath, fragment).getOrElse(
            throw new IllegalStateException(s"Fragment ${fragment.getId} of ${files.tablePath} has no row ids")))
          val base = fragment.getId << 32
          ColumnScan.foreach(files, storageConf, fragment, fieldBytes, piece.start, piece.end) { (vector, i, offset) =>
            builder.add(rowIds.fold(base | Integer.toUnsignedLong(offset))(_(offset)), vector, i)
          }
        }
        val out = Using.resource(Allocators.child(s"INVERTED index partition $p of ${files.tablePath}")) { allocator =>
          builder.write(storage, dir, p, allocator)
        }
        (p, out)
      }.collect().toSeq
      catch { case e: Throwable => dataset.storage.deleteRecursively(dir); throw e }
      val nonEmpty = written.filter(_._2.nonEmpty).sortBy(_._1)
      val fileSizes = Using.resource(Allocators.child(s"INVERTED index $name of $quotedName")) { allocator =>
        // No document at all: one empty partition, so the segment still names its files.
        val parts = if (nonEmpty.nonEmpty) nonEmpty
          else Seq(0 -> new TextPartitionBuilder(params.analyzer, params.withPosition).write(dataset.storage, dir, 0, allocator, evenIfEmpty = true))
        parts.flatMap(_._2) :+ TextIndexFiles.writeMetadata(dataset.storage, dir, parts.map(_._1), params, allocator)
      }
      IndexEntry(uuid, name, field.id, read.version, IndexEntry.fragments(fragments.map(_.getId)), InvertedTypeUrl,
        params.details, IndexVersion, fileSizes)
    } finally sc.setJobDescription(previous)
  }

  /**
   * What optimize_index does to the INVERTED index whose segments are `segments`, as pylance's
   * `optimize_indices` does by default: the live fragments no segment covers get a segment of
   * their own (a delta), tokenized with the index's own settings; the segments stay. None when
   * every fragment is covered. Merging segments (num_indices_to_merge, retrain) is not done for
   * INVERTED indices. Settings sparklance does not write (other tokenizers) are
   * refused by name when the index is `named`, else the index is left as it is.
   */
  def optimize(spark: SparkSession, quotedName: String, dataset: Dataset, read: Snapshot, storageConf: Map[String, String],
      segments: Seq[IndexMetadata], named: Boolean, where: String): Option[ScalarIndexBuild.Optimized] = {
    val name = segments.head.getName
    val covered = sparklance.format.index.Indices.coverage(segments, read.fragments.map(_.getId))
    val uncovered = read.fragments.filterNot(f => covered.contains(f.getId.toInt))
    if (uncovered.isEmpty) None
    else {
      val field = read.schema.fields.find(_.id == segments.head.getFields(0)).getOrElse(throw new IllegalArgumentException(
        s"$where: index '$name' is on field id ${segments.head.getFields(0)}, which the table no longer has; drop it"))
      val params = {
        val md = sparklance.format.skipping.IndexFile.open(dataset.storage, read.files, segments.last, TextIndexFiles.MetadataFile)
        try {
          val json = md.schema.metadata.get("params").map(new String(_, UTF_8)).getOrElse(
            throw new IllegalArgumentException(s"$where: index '$name' has no params in its metadata.lance"))
          try Some(TextIndexParams.fromJson(json, s"$where: index '$name'"))
          catch { case _: sparklance.format.UnsupportedFeatureException if !named => None }
        } finally md.close()
      }
      params.map { p =>
        val added = segment(spark, quotedName, dataset, read, storageConf, field, p, name, uncovered, None)
        ScalarIndexBuild.Optimized(name, uncovered.size, Seq(added), Nil)
      }
    }
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
