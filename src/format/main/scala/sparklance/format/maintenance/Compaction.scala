package sparklance.format.maintenance

import org.apache.arrow.memory.RootAllocator
import scala.jdk.CollectionConverters._
import scala.util.Using
import scala.util.control.NonFatal
import sparklance.format.{CommitConflictException, CommitStateUnknownException}
import sparklance.format.commit.{CommitRecord, CommitResult, Committer, NewFragmentIndices, Operation, Statement}
import sparklance.format.index.{Indices, RewriteIndexRules}
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.skipping.{WrittenZones, ZoneColumn}
import sparklance.format.table.{Dataset, Snapshot}

/**
 * Compacts a table as Lance does: plans against the latest version, runs every task through
 * `runTasks` (in this process by default; the Spark layer runs them as a distributed job), then
 * commits a ReserveFragments, so the new fragments get final ids, and a Rewrite whose read version
 * is the planned one, so every commit since is checked against it.
 *
 * A statement that changed some of the planned fragments meanwhile wins: the groups it touched are
 * dropped (their files deleted), the rest commit, and the touched fragments are planned again from
 * the newer version, up to `maxRounds` times.
 */
final class Compaction(dataset: Dataset, runTasks: Compaction.TaskRunner = Compaction.inProcess, maxRounds: Int = 3,
    indexing: Compaction.Indexing = Compaction.NoIndexing) {
  private def storage: Storage = dataset.storage

  def plan(options: CompactionOptions): CompactionPlan =
    CompactionPlanner.plan(dataset.snapshot(forWrite = true), storage, options)

  def run(options: CompactionOptions): CompactionResult = {
    val first = dataset.snapshot(forWrite = true)
    // Chosen once, on the first planned version: every round's tasks gather the zones of these.
    val zoneColumns = indexing.zoneColumns(first)
    var plan = CompactionPlanner.plan(first, storage, options)
    // What each round's plan left alone: a round planned again may find an index built meanwhile.
    val leftAlone = scala.collection.mutable.LinkedHashMap.empty[Long, LeftAlone]
    plan.leftAlone.foreach(l => leftAlone.getOrElseUpdate(l.fragmentId, l))
    var snapshot = first
    val committed = Seq.newBuilder[Operation.RewriteGroup]
    var version = Option.empty[Long]
    var replanned = 0
    var round = 0
    while (!plan.isEmpty && round < maxRounds) {
      val (landed, kept, lost) = commit(snapshot, zoneColumns, runTasks(dataset, snapshot, plan.tasks, zoneColumns))
      committed ++= kept
      version = landed.orElse(version)
      replanned += lost.size
      round += 1
      if (lost.isEmpty) plan = CompactionPlan(snapshot.version, Nil, Nil)
      else {
        // Plan again only where the other statement landed: every other fragment is out of scope.
        val touched = lost.flatMap(_.oldFragments.map(_.getId)).toSet
        snapshot = dataset.snapshot(forWrite = true)
        plan = CompactionPlanner.plan(snapshot, storage, options.copy(excludedFragmentIds =
          options.excludedFragmentIds ++ snapshot.fragments.map(_.getId).filterNot(touched)))
        plan.leftAlone.foreach(l => leftAlone.getOrElseUpdate(l.fragmentId, l))
      }
    }
    val groups = committed.result()
    val old = groups.flatMap(_.oldFragments)
    val created = groups.flatMap(_.newFragments)
    CompactionResult(first.version, version, old.size, created.size,
      old.map(f => f.getFilesCount + (if (f.hasDeletionFile) 1 else 0)).sum, created.map(_.getFilesCount).sum,
      created.map(_.getPhysicalRows).sum, replanned, leftAlone.values.toSeq.sortBy(_.fragmentId))
  }

  /**
   * Commits the groups that still apply; returns the version, the groups committed and those
   * dropped because a newer commit changed their fragments or covered them with an index a rewrite
   * cannot carry. Ids are reserved once; after a lost race the groups are checked against the
   * latest version again and committed on it, so a commit that only changed other fragments or
   * indices (an index built meanwhile, a zone map fold) is passed, not met again on every retry.
   */
  private def commit(planned: Snapshot, zoneColumns: Seq[ZoneColumn], groups: Seq[Operation.RewriteGroup])
      : (Option[Long], Seq[Operation.RewriteGroup], Seq[Operation.RewriteGroup]) = {
    val committer = new Committer(dataset)
    var pending = groups
    var lost = Seq.empty[Operation.RewriteGroup]
    // Drops the groups that no longer apply on `read`.
    def keepApplicable(read: Snapshot): Unit = {
      val blocked = newlyBlocked(planned, read)
      val current = read.fragments.map(f => f.getId -> f).toMap
      val (changed, intact) = pending.partition(g => g.oldFragments.exists(f => !unchanged(current, f) || blocked(f.getId)))
      drop(changed)
      lost ++= changed
      pending = intact
    }
    var attempts = 0
    var reserved = false
    while (pending.nonEmpty) {
      var read = dataset.snapshot(forWrite = true)
      keepApplicable(read)
      // The Rewrite builds on the version that reserved its ids, the first time: what landed
      // before the reservation is checked here, what lands after it by the committer.
      if (pending.nonEmpty && !reserved) {
        val (withIds, reservation) = try reserveIds(committer, read, pending) catch { case NonFatal(e) => drop(pending); throw e }
        pending = withIds
        reserved = true
        read = reservation
        keepApplicable(read)
      }
      if (pending.isEmpty) return (None, Nil, lost)
      try {
        val segments = indexing.segments(read, zoneColumns, pending.flatMap(_.newFragments),
          pending.map(_.zones).foldLeft(WrittenZones.Empty)(_ ++ _))
        return (Some(committer.commit(Some(read), Operation.Rewrite(pending), indexing = segments, record = Compaction.Record).version), pending, lost)
      }
      catch {
        case e: CommitConflictException if e.retryable && attempts < Compaction.CommitAttempts => attempts += 1
        case e: CommitConflictException => drop(pending); throw e
      }
    }
    (None, Nil, lost)
  }

  /**
   * The fragments that indices added since `planned` cover and that a rewrite must leave alone
   * (see RewriteIndexRules.blocksRewrite; an index of unknown coverage covers every fragment).
   */
  private def newlyBlocked(planned: Snapshot, latest: Snapshot): Long => Boolean = {
    val before = Indices.parse(planned.file.indexSection, s"${planned.tablePath} version ${planned.version}").map(Indices.directory).toSet
    val added = Indices.parse(latest.file.indexSection, s"${latest.tablePath} version ${latest.version}")
      .filterNot(i => before(Indices.directory(i)))
      .filter(i => RewriteIndexRules.blocksRewrite(Indices.kind(i), latest.stableRowIds))
    id => added.exists(i => Indices.coverage(i).forall(_.contains(id.toInt)))
  }

  private def unchanged(latest: Map[Long, DataFragment], f: DataFragment): Boolean =
    latest.get(f.getId).exists(now => now.getFilesList == f.getFilesList && now.getDeletionFile == f.getDeletionFile)

  /**
   * Reserves one id per new fragment (a ReserveFragments commit) and hands them out in order;
   * returns the groups with their ids and the version that reserved them.
   */
  private def reserveIds(committer: Committer, latest: Snapshot, groups: Seq[Operation.RewriteGroup])
      : (Seq[Operation.RewriteGroup], Snapshot) = {
    val count = groups.map(_.newFragments.size).sum
    if (count == 0) return (groups, latest)
    // A reservation holds no data: one whose outcome is unknown (a racing commit of the same clock
    // tick on a store that cannot say which came first) is left as it is, landed or not, and ids
    // are reserved again on the latest version. Landed, it only leaves a gap in the ids.
    def reserve(read: Snapshot, attempt: Int): CommitResult =
      try committer.commit(Some(read), Operation.ReserveFragments(count), record = Compaction.Record)
      catch { case _: CommitStateUnknownException if attempt < Compaction.CommitAttempts => reserve(dataset.snapshot(forWrite = true), attempt + 1) }
    val reserved = reserve(latest, 1)
    var next = Integer.toUnsignedLong(reserved.snapshot.manifest.getMaxFragmentId) - count + 1
    (groups.map(g => g.copy(newFragments = g.newFragments.map { f => val b = f.toBuilder.setId(next).build(); next += 1; b })),
      reserved.snapshot)
  }

  /** Deletes the data files of groups that will never be committed. */
  private def drop(groups: Seq[Operation.RewriteGroup]): Unit =
    for (g <- groups; f <- g.newFragments; file <- f.getFilesList.asScala)
      try storage.delete(Storage.join(dataset.path, s"data/${file.getPath}")) catch { case NonFatal(_) => }
}

object Compaction {
  /** Both of a compaction's commits, its reservation and its rewrite, are the COMPACT statement's. */
  private val Record = Some(CommitRecord(Statement.Compact))

  /** Commits of one round's groups before a compaction gives up on a table that keeps changing under it. */
  val CommitAttempts = 5

  /**
   * The zone maps a compaction keeps on its new fragments: the columns, chosen on the planned
   * version, whose zones its tasks gather while they write, and the segments committed with the
   * new fragments (final ids) from those zones, built on `read`.
   */
  trait Indexing {
    def zoneColumns(planned: Snapshot): Seq[ZoneColumn]
    def segments(read: Snapshot, columns: Seq[ZoneColumn], fragments: Seq[DataFragment], zones: WrittenZones): Option[NewFragmentIndices]
  }
  val NoIndexing: Indexing = new Indexing {
    def zoneColumns(planned: Snapshot): Seq[ZoneColumn] = Nil
    def segments(read: Snapshot, columns: Seq[ZoneColumn], fragments: Seq[DataFragment], zones: WrittenZones) = None
  }

  /**
   * Runs the tasks of a plan of `snapshot`, gathering the zones of the zone columns, and returns
   * one group per task, in order.
   */
  type TaskRunner = (Dataset, Snapshot, Seq[CompactionTask], Seq[ZoneColumn]) => Seq[Operation.RewriteGroup]

  /** One task after another in this process. */
  val inProcess: TaskRunner = (dataset, snapshot, tasks, zoneColumns) => Using.resource(new RootAllocator()) { allocator =>
    tasks.map(TaskRewriter.rewrite(dataset.storage, snapshot, _, allocator, zoneColumns))
  }
}
