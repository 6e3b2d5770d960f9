package sparklance.format.index

import org.roaringbitmap.RoaringBitmap
import scala.jdk.CollectionConverters._
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.io.Storage
import sparklance.format.table.BasePaths
import sparklance.format.proto.TableProtos.{FragmentReuseIndexDetails, IndexMetadata}

/**
 * What a table's fragment reuse index (`__lance_frag_reuse`, written by pylance's
 * `compact_files(defer_index_remap=True)`) says about its other indices. Such a compaction leaves
 * each index's files, and its stored fragment bitmap, naming the fragments it replaced; Lance maps
 * both through the reuse index whenever it loads indices (LANCE-MAINTENANCE.md §1.6):
 * - a bitmap holding every old fragment of a group holds its new fragments instead;
 * - an index built before a compaction finds the rows of that compaction's new fragments only
 *   through the reuse index's row maps.
 * sparklance follows the first rule wherever it changes coverage, and for the second never reads
 * such an index for those fragments (it does not map rows, so it scans them).
 */
sealed trait FragmentReuse {
  /** Lance's view of a stored bitmap: the old fragments of each compacted group replaced by its new ones. */
  def remap(coverage: RoaringBitmap): RoaringBitmap
  /** The fragments whose rows `index` holds under addresses a deferred compaction replaced. */
  def unmapped(index: IndexMetadata): Set[Long]
  /** A stored bitmap that, in Lance's view, no longer covers `fragments` (and covers what it did else). */
  def without(coverage: RoaringBitmap, fragments: Seq[Long]): RoaringBitmap = remapThenRemove(coverage, fragments)

  protected final def remapThenRemove(coverage: RoaringBitmap, fragments: Seq[Long]): RoaringBitmap = {
    val left = remap(coverage)
    fragments.foreach(id => left.remove(id.toInt))
    left
  }
}

object FragmentReuse {
  val IndexName = "__lance_frag_reuse"

  /** One group of a deferred compaction: fragments `before` were rewritten as `after`. */
  final case class Group(before: Seq[Long], after: Seq[Long])
  /** The groups of one deferred compaction, which read `datasetVersion`. */
  final case class Compaction(datasetVersion: Long, groups: Seq[Group])

  /** A table without a reuse index: stored bitmaps are what Lance sees. */
  case object Absent extends FragmentReuse {
    def remap(coverage: RoaringBitmap): RoaringBitmap = coverage.clone()
    def unmapped(index: IndexMetadata): Set[Long] = Set.empty
  }

  /** A reuse index in Lance's untagged format, which sparklance reads. */
  final case class Known(compactions: Seq[Compaction]) extends FragmentReuse {
    def remap(coverage: RoaringBitmap): RoaringBitmap = {
      val out = coverage.clone()
      for (c <- compactions; g <- c.groups) {
        val held = g.before.count(id => out.contains(id.toInt))
        if (held > 0) {
          // Lance refuses the same: a group is rewritten, and reindexed, whole or not at all.
          if (held != g.before.size) throw new UnsupportedFeatureException(s"An index covers fragments " +
            s"${g.before.filter(id => out.contains(id.toInt)).mkString(", ")} but not all of ${g.before.mkString(", ")}, " +
            "which a deferred compaction rewrote together; Lance refuses such an index too")
          g.before.foreach(id => out.remove(id.toInt))
          g.after.foreach(id => out.add(id.toInt))
        }
      }
      out
    }

    def unmapped(index: IndexMetadata): Set[Long] =
      if (index.getName == IndexName) Set.empty
      else compactions.filter(_.datasetVersion > index.getDatasetVersion).flatMap(_.groups.flatMap(_.after)).toSet
  }

  /**
   * A reuse index in a format sparklance does not read (Lance's tagged one): its fragments are
   * read without indices, and coverage cannot be changed through it.
   */
  final case class Opaque(index: IndexMetadata) extends FragmentReuse {
    private lazy val fragments = Indices.coverage(index).map(_.toArray.map(Integer.toUnsignedLong).toSet).getOrElse(Set.empty)
    def remap(coverage: RoaringBitmap): RoaringBitmap = throw new UnsupportedFeatureException(
      s"This table's fragment reuse index ${Indices.describe(index)} has index_version ${index.getIndexVersion}, a format " +
        "sparklance does not read, so it cannot change which fragments the table's indices cover; run pylance's " +
        "optimize_indices() first, or rewrite rows (rewrite_mode = 'rows')")
    def unmapped(other: IndexMetadata): Set[Long] = if (other.getName == IndexName) Set.empty else fragments
    // Fragments the reuse index does not name are seen as stored.
    override def without(coverage: RoaringBitmap, removed: Seq[Long]): RoaringBitmap =
      (if (removed.exists(fragments)) this else Absent).remapThenRemove(coverage, removed)
  }

  /** The reuse index among `indices`, read through the version's `files` where its details are in a file. */
  def of(storage: Storage, files: BasePaths, indices: Seq[IndexMetadata]): FragmentReuse =
    indices.find(_.getName == IndexName).fold[FragmentReuse](Absent) { index =>
      if (index.getIndexVersion != 0) Opaque(index)
      else {
        val tablePath = files.tablePath
        val where = s"the fragment reuse index of $tablePath"
        val details = try index.getIndexDetails.unpack(classOf[FragmentReuseIndexDetails])
        catch { case e: com.google.protobuf.InvalidProtocolBufferException => throw new CorruptFileException(tablePath, s"undecodable details of $where", e) }
        val content = details.getContentCase match {
          case FragmentReuseIndexDetails.ContentCase.INLINE => details.getInline
          case FragmentReuseIndexDetails.ContentCase.EXTERNAL =>
            val file = details.getExternal
            val path = Storage.join(files.indexDir(index), file.getPath)
            val in = storage.openInput(path)
            val bytes = try in.read(file.getOffset, Math.toIntExact(file.getSize)) finally in.close()
            try FragmentReuseIndexDetails.InlineContent.parseFrom(bytes)
            catch { case e: com.google.protobuf.InvalidProtocolBufferException => throw new CorruptFileException(path, s"undecodable $where", e) }
          case _ => throw new CorruptFileException(tablePath, s"$where has no content")
        }
        if (!content.getUnknownFields.asMap.isEmpty) Opaque(index)
        else Known(content.getVersionsList.asScala.toSeq.map { v =>
          Compaction(v.getDatasetVersion, v.getGroupsList.asScala.toSeq.map(g =>
            Group(g.getOldFragmentsList.asScala.map(_.getId).toSeq, g.getNewFragmentsList.asScala.map(_.getId).toSeq)))
        })
      }
    }
}
