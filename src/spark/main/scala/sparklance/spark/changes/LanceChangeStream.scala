package sparklance.spark.changes

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.ChangelogRange
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming._
import org.apache.spark.sql.types.{ArrayType, DataType, MapType, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import scala.collection.concurrent.TrieMap
import sparklance.format.{InvalidOptionException, VersionRemovedException}
import sparklance.format.rowids.ChangedRows
import sparklance.format.table.Snapshot
import sparklance.spark.SparkTypes
import sparklance.spark.errors.LanceErrors
import sparklance.spark.streaming.{InitialOffsetStore, LanceSourceOffset, LanceSourceOptions, LanceVersionStream, StreamSchemaException}

/**
 * The change-data stream of a table with stable row ids: each micro-batch reads the commits of a
 * run of new versions, and its rows are those the batch `CHANGES FROM VERSION a TO VERSION b`
 * gives for them (read by the same [[LanceChangelogScan]]). Offsets are [[LanceSourceOffset]]s:
 * `startOf(v)` when commit v is the next to read; inside the initial snapshot (the rows of the
 * version the query started at, as inserts at that version, Delta's default start) `index` counts
 * its fragments read. A batch takes whole commits, at least one, as many as `maxFilesPerTrigger`
 * (changed fragments) and `maxRowsPerTrigger` (changed rows) admit.
 *
 * The stream's schema is the changelog's (fixed when the query is analysed, at version `S` =
 * `changelog.end`): rows of commits up to S are served in it as a batch read up to S serves them
 * ([[ChangeSchemas]]); a later version in another schema stops the query, to be restarted in the
 * new schema. A version cleanup removed before the stream read it stops the query too: nothing is
 * skipped. `planInputPartitions(start, end)` depends on the two offsets and the table's immutable
 * manifests only, so a batch replayed after a restart reads the same rows.
 */
final class LanceChangeStream(scan: LanceChangelogScan, changelog: LanceChangelog, options: CaseInsensitiveStringMap,
    checkpointLocation: String) extends LanceVersionStream {
  override protected val dataset: sparklance.format.table.Dataset = changelog.dataset
  private val table = changelog.tableName
  /** The version whose schema the stream reads in. */
  private val streamVersion = changelog.end.version
  override protected val sourceOptions: LanceSourceOptions =
    LanceErrors.convertingArguments(sparklance.spark.errors.LanceErrorCondition.InvalidOption) {
      LanceSourceOptions.parse(options)
    }
  changelog.requested match {
    case r: ChangelogRange.VersionRange if r.endingVersion().isPresent => refuseEnd("endingVersion")
    case r: ChangelogRange.TimestampRange if r.endingTimestamp().isPresent => refuseEnd("endingTimestamp")
    case _ =>
  }
  private def refuseEnd(option: String) = throw LanceErrors.convert(new InvalidOptionException(option,
    s"a change-data stream of $table reads every version committed from where it starts on, without an end; " +
      "read a range of versions in a batch query"))

  /** Manifests read, by version (they never change); dropped once a batch past them commits. */
  private val snapshots = TrieMap.empty[Long, Snapshot]
  /** The rows each commit changed, found to admit it and kept to plan its batch. */
  private val changes = TrieMap.empty[Long, Seq[ChangedRows]]
  override def initialOffset(): Offset = LanceErrors.converting {
    val hadoopConf = SparkSession.active.sessionState.newHadoopConf()
    new InitialOffsetStore(checkpointLocation, hadoopConf).getOrStore(resolveStart())
  }

  /** Where a new query starts: from the bounds Spark parsed (`startingVersion`, `startingTimestamp`, `FROM VERSION`). */
  private def resolveStart(): LanceSourceOffset = changelog.requested match {
    case r: ChangelogRange.VersionRange =>
      val text = r.startingVersion().trim
      if (text.equalsIgnoreCase("latest")) LanceSourceOffset.startOf(streamVersion + 1)
      else {
        val latest = dataset.latestVersion
        val v = text.toLongOption.filter(v => v >= 1 && v <= latest).getOrElse(throw new InvalidOptionException(
          LanceSourceOptions.StartingVersion, s"'$text' is not a version of $table: its versions go from 1 to $latest " +
            "(or give 'latest' for the changes committed after the query starts)"))
        LanceSourceOffset.startOf(if (r.startingBoundInclusive()) v else v + 1)
      }
    case r: ChangelogRange.TimestampRange =>
      val micros = r.startingTimestamp()
      val listing = dataset.listing()
      // The first version committed at (or, exclusive, after) the time; none yet: the next one.
      val first = listing.versions.find { v =>
        val at = snapshot(v, listing).commitMicros
        at > micros || (r.startingBoundInclusive() && at == micros)
      }
      LanceSourceOffset.startOf(first.getOrElse(listing.versions.last + 1))
    case _ => LanceSourceOffset(streamVersion, 0, initialSnapshot = true)
  }

  private def snapshot(v: Long, listing: => sparklance.format.table.Dataset#Listing): Snapshot =
    if (v == streamVersion) changelog.end else snapshots.getOrElseUpdate(v, listing.snapshot(v))

  /**
   * The end of the next batch from `startOffset`: whole commits (or fragments of the initial
   * snapshot), as many as `limit` admits and at least one; `startOffset` when there is nothing new.
   */
  override def latestOffset(startOffset: Offset, limit: ReadLimit): Offset = LanceErrors.converting {
    val from = offset(startOffset)
    val listing = dataset.listing()
    val last = lastReadable(listing)
    val most = Some(LanceSourceOptions.bounds(limit)).filter(_ != ((Long.MaxValue, Long.MaxValue)))
    /**
     * How many of `costs` (changed fragments, rows, whether it must start a batch) a batch takes:
     * at least one, then while within `most`.
     */
    def admitted(costs: Iterator[(Long, Long, Boolean)]): Int = {
      val (maxFiles, maxRows) = most.getOrElse((Long.MaxValue, Long.MaxValue))
      var (n, files, rows) = (0, 0L, 0L)
      costs.takeWhile { case (f, r, first) =>
        val take = n == 0 || (!first && files + f <= maxFiles && rows + r <= maxRows)
        if (take) { n += 1; files += f; rows += r }
        take
      }.foreach(_ => ())
      n
    }
    if (from.initialSnapshot) {
      val fragments = snapshot(from.tableVersion, listing).fragments
      val rest = fragments.drop(from.index.toInt)
      val n = if (most.isEmpty) rest.size else admitted(rest.iterator.map(f => (1L, f.getPhysicalRows, false)))
      if (n >= rest.size) LanceSourceOffset.startOf(from.tableVersion + 1)
      else LanceSourceOffset(from.tableVersion, from.index + n, initialSnapshot = true)
    } else if (from.tableVersion > last) from
    else {
      val commits = from.tableVersion to last
      // The commits before a version in another schema than the stream's go in a batch of their
      // own: a query stopped by that version has read everything before it.
      val n = admitted(commits.iterator.map { v =>
        val newSchema = v > streamVersion &&
          snapshot(v, listing).manifest.getFieldsList != changelog.end.manifest.getFieldsList
        if (most.isEmpty && !newSchema) (0L, 0L, false)
        else {
          val rows = commitRows(v, listing)
          (rows.size.toLong, rows.map(_.rows.getLongCardinality).sum, newSchema)
        }
      })
      LanceSourceOffset.startOf(from.tableVersion + math.min(n.toLong, commits.size.toLong))
    }
  }

  private def commitRows(v: Long, listing: => sparklance.format.table.Dataset#Listing): Seq[ChangedRows] =
    changes.getOrElseUpdate(v, {
      val compared = load(math.max(1L, v - 1) to v, v, listing)
      CommitRows.of(dataset, compared.find(_.version == v - 1), compared.last)
    })

  /** The manifests of `versions`, which reading commit `commit` needs: a version cleanup removed is an error. */
  private def load(versions: Seq[Long], commit: Long, listing: => sparklance.format.table.Dataset#Listing): Seq[Snapshot] = {
    lazy val kept = listing.versions
    lazy val keptSet = kept.toSet
    versions.find(v => v != streamVersion && !snapshots.contains(v) && !keptSet(v)).foreach { gone =>
      // Commit v compares versions v - 1 and v: the first one left to read is the one after the oldest version.
      val readable = if (kept.head == 1) 1L else kept.head + 1
      val from = if (readable > kept.last) s"${LanceSourceOptions.StartingVersion} latest (the changes committed from now on)"
        else s"${LanceSourceOptions.StartingVersion} $readable or later"
      throw new VersionRemovedException(dataset.path, gone, kept.head, s"; the change-data stream of $table needs it to " +
        s"read commit ${math.max(commit, gone)}, and skips nothing. Start a new query (a new checkpoint location) with " +
        s"$from, or without ${LanceSourceOptions.StartingVersion} to start from the table as it is now")
    }
    versions.map(snapshot(_, listing))
  }

  /**
   * The versions commits `first` to `last` compare (`first - 1` to `last`), with the ones up to
   * the stream's version for serving rows in its schema, checked as a batch read checks them; a
   * version after the stream's in another schema is an error asking for a restart.
   */
  private def served(first: Long, last: Long, listing: => sparklance.format.table.Dataset#Listing): ChangeRange = {
    val from = math.max(1L, first - 1)
    val loaded = load(from to math.max(last, if (from <= streamVersion) streamVersion else last), first, listing)
    val end = changelog.end
    loaded.find(s => s.version > streamVersion && s.manifest.getFieldsList != end.manifest.getFieldsList).foreach { s =>
      throw new StreamSchemaException(table, s.version, streamVersion)
    }
    val schemas = new ChangeSchemas(table, loaded)
    schemas.breaks.lastOption.foreach { b =>
      throw new ChangeDataSchemaException(table, first, loaded.last.version, b.version, b.column, b.what, stream = true)
    }
    // Rows of earlier versions may hold NULL in a column the stream's schema (taken from where
    // the query asked to start) has as NOT NULL; reading them there would break that promise.
    if (!fits(SparkTypes.toSpark(schemas.servedSchema, table), changelog.dataSchema))
      throw new StreamSchemaException(table, from, streamVersion)
    ChangeRange(first, last, loaded, Some(schemas))
  }

  /** Whether rows of `served` can be read as `stream`: the same types, nullable where `served` is. */
  private def fits(served: DataType, stream: DataType): Boolean = (served, stream) match {
    case (a: StructType, b: StructType) => a.length == b.length && a.fields.zip(b.fields).forall { case (x, y) =>
      x.name == y.name && (!x.nullable || y.nullable) && fits(x.dataType, y.dataType)
    }
    case (ArrayType(a, an), ArrayType(b, bn)) => (!an || bn) && fits(a, b)
    case (MapType(ak, av, an), MapType(bk, bv, bn)) => (!an || bn) && fits(ak, bk) && fits(av, bv)
    case (a, b) => a == b
  }

  /**
   * The rows from `start` up to `end`: the initial snapshot's fragments between them, then every
   * commit between them, each as the batch read reads it.
   */
  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = LanceErrors.converting {
    val (from, to) = (offset(start), offset(end))
    lazy val listing = dataset.listing()
    val firstCommit = if (from.initialSnapshot) from.tableVersion + 1 else from.tableVersion
    val lastCommit = if (to.initialSnapshot) to.tableVersion else to.tableVersion - 1
    if (!from.initialSnapshot && firstCommit > lastCommit) return Array.empty
    // The initial snapshot is read at the version before the first commit: one range serves both.
    val range = served(firstCommit, math.max(lastCommit, firstCommit - 1), listing)
    val initial = if (!from.initialSnapshot) None else {
      val at = range.snapshot(from.tableVersion).get
      val until = if (to.initialSnapshot) to.index.toInt else at.fragments.size
      Some(at -> CommitRows.snapshot(dataset, at, at.fragments.slice(from.index.toInt, until)))
    }
    val commits = (firstCommit to lastCommit).map(v => range.snapshot(v).get -> commitRows(v, listing))
    val splits = scan.splits(range, initial.toSeq ++ commits)
    if (splits.isEmpty) Array.empty else scan.pack(splits)
  }

  override def createReaderFactory(): PartitionReaderFactory = scan.createReaderFactory()

  /** Versions before `end` are never read again by this run of the query. */
  override def commit(end: Offset): Unit = {
    val done = offset(end)
    // The version before the next commit is compared again.
    snapshots.keys.filter(_ < done.tableVersion - 1).foreach(snapshots.remove)
    changes.keys.filter(_ < done.tableVersion).foreach(changes.remove)
  }

  override def stop(): Unit = { snapshots.clear(); changes.clear() }

  override def toString: String = s"LanceChangeStream($table)"
}
