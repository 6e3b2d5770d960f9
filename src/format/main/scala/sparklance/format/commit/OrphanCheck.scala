package sparklance.format.commit

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import org.roaringbitmap.RoaringBitmap
import sparklance.format.deletion.DeletionFiles
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, Manifest}
import sparklance.format.table.{BasePaths, Dataset, Snapshot, VersionNaming}

/**
 * Whether a manifest we just published is an orphan: a version below one that existed before it,
 * which no reader follows. The committer looks for newer versions before its put, but between that
 * look and the put another writer may commit our version and the next one, and a cleanup remove the
 * first (Lance's cleanup keeps only the newest version when told to): our put-if-absent then fills
 * the hole. A successor built on our version was written after ours, and every file of a table gets
 * its time from one clock, the store's; where the times are equal (stores that keep whole seconds),
 * the successor's fragments tell: one built on ours holds the fragments we added, with our files.
 */
private[commit] object OrphanCheck {
  sealed trait Verdict
  /** No newer version was listed: ours is the table's latest. */
  case object Newest extends Verdict
  /** Every newer version came after ours, or the listing failed. */
  case object Live extends Verdict
  /** A newer version existed before ours: ours is invisible. */
  case object Orphan extends Verdict
  /** Newer versions of the same time, and nothing in the first tells whether it saw ours. */
  case object Undecided extends Verdict

  /** `ours` is the manifest just put as `version`, built on `base` (None: the table's first). */
  def verdict(dataset: Dataset, naming: VersionNaming, version: Long, ours: Manifest, base: Option[Manifest]): Verdict = {
    val entries = try dataset.storage.list(Storage.join(dataset.path, "_versions")) catch {
      // The put landed; a listing that fails right after it is far likelier than a hole to fall into.
      case NonFatal(_) => return Live
    }
    val times = entries.flatMap(e => VersionNaming.parse(e.name).collect { case (`naming`, v) => v -> e.modifiedMillis }).toMap
    val newer = times.filter(_._1 > version)
    if (newer.isEmpty) Newest
    else times.get(version) match {
      case Some(mine) if newer.values.exists(_ < mine) => Orphan
      case Some(mine) if newer.values.forall(_ > mine) => Live
      case _ => evidence(dataset, naming, newer.keys.min, ours, base)
    }
  }

  /** What version `successor` (the first above ours) says of whether it was built on `ours`. */
  private def evidence(dataset: Dataset, naming: VersionNaming, successor: Long, ours: Manifest, base: Option[Manifest]): Verdict =
    Transactions.lookup(dataset, successor, naming) match {
      case VersionLookup.Committed(snapshot, txn) =>
        val before = base.toSeq.flatMap(_.getFragmentsList.asScala).map(f => f.getId -> f).toMap
        val theirs = snapshot.fragments.map(f => f.getId -> f).toMap
        // A compaction records the fragments it replaced, so ours are found there if it took them.
        val replaced = txn.toSeq.filter(_.hasRewrite).flatMap { t =>
          t.getRewrite.getOldFragmentsList.asScala ++ t.getRewrite.getGroupsList.asScala.flatMap(_.getOldFragmentsList.asScala)
        }.map(f => f.getId -> f).toMap
        val mine = ours.getFragmentsList.asScala.toSeq
        // Data files of fragments we added have names no other writer uses.
        val added = mine.filterNot(f => before.contains(f.getId))
        val addedVerdict = added.iterator.flatMap { f =>
          theirs.get(f.getId).orElse(replaced.get(f.getId)).map(g => if (g.getFilesList == f.getFilesList) Live else Orphan)
        }.nextOption()
        addedVerdict.getOrElse {
          val changed = mine.filter(f => before.get(f.getId).exists(_ != f))
          def carried(f: DataFragment) = theirs.get(f.getId).orElse(replaced.get(f.getId))
          if (changed.exists(f => carried(f).contains(f))) Live
          // Racing deletes of one fragment each write a deletion file of their own: a successor that
          // changed our fragment again was built on ours if it still deletes every row we deleted,
          // or still holds every data file we added (a column rewritten in place).
          else if (changed.exists(f => carried(f).exists(g => keepsOurChange(dataset, f, before(f.getId), ours, base.get, g, snapshot)))) Live
          else Undecided
        }
      case _ => Undecided
    }

  /**
   * Whether `theirs` (fragment `ours.getId` of the successor `successor`) keeps what our manifest
   * changed in it from `before`: every row our deletion file added, or every data file we added.
   * A change of neither kind, or a deletion file that cannot be read, tells nothing.
   */
  private def keepsOurChange(dataset: Dataset, ours: DataFragment, before: DataFragment, ourManifest: Manifest,
                             baseManifest: Manifest, theirs: DataFragment, successor: Snapshot): Boolean = try {
    val addedFiles = ours.getFilesList.asScala.map(_.getPath).toSet -- before.getFilesList.asScala.map(_.getPath)
    val deleted = DeletionFiles.read(dataset.storage, BasePaths.of(dataset.path, ourManifest), ours)
    deleted.andNot(DeletionFiles.read(dataset.storage, BasePaths.of(dataset.path, baseManifest), before))
    val filesKept = addedFiles.nonEmpty && addedFiles.subsetOf(theirs.getFilesList.asScala.map(_.getPath).toSet)
    val deletionsKept = !deleted.isEmpty &&
      RoaringBitmap.andNot(deleted, DeletionFiles.read(dataset.storage, successor.files, theirs)).isEmpty
    (addedFiles.nonEmpty || !deleted.isEmpty) && (addedFiles.isEmpty || filesKept) && (deleted.isEmpty || deletionsKept)
  } catch { case NonFatal(_) => false }
}
