package sparklance.spark.streaming

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming._
import org.apache.spark.sql.types.StructType
import scala.collection.concurrent.TrieMap
import sparklance.format.VersionRemovedException
import sparklance.spark.LanceTable
import sparklance.spark.errors.LanceErrors
import sparklance.spark.scan.{FragmentSplit, SplitPacking}

/**
 * The append stream of a Lance table (`spark.readStream.table(...)`): each micro-batch reads the
 * fragments that new versions appended, as those versions list them, in version order; by
 * default the rows of the version the query started at come first (its whole fragment list).
 * Offsets are positions in that sequence ([[LanceSourceOffset]]); a batch reads at most
 * `maxFilesPerTrigger` fragments or `maxRowsPerTrigger` rows and at least one fragment. What a
 * version gives is decided from its transaction ([[VersionRows]]): compactions, indices and
 * config changes give nothing, versions that change or remove rows fail the query (or, with
 * `skipChangeCommits`, give nothing), and a version cleanup removed before the stream read it
 * fails it too. `table` is the table as the query was analysed: its schema is the stream's.
 */
final class LanceMicroBatchStream(table: LanceTable, readSchema: StructType, readerFactory: () => PartitionReaderFactory,
    options: LanceSourceOptions, checkpointLocation: String, hadoopConf: Configuration) extends LanceVersionStream {
  override protected val dataset: sparklance.format.table.Dataset = table.dataset
  override protected def sourceOptions: LanceSourceOptions = options
  private val reader = new VersionRows.Reader(table.tableName, dataset, table.snapshot, options.skipChangeCommits)
  /** Versions read so far, by (version, whether as the initial snapshot); dropped once a batch past them commits. */
  private val known = TrieMap.empty[(Long, Boolean), VersionRows]
  override def initialOffset(): Offset = LanceErrors.converting {
    new InitialOffsetStore(checkpointLocation, hadoopConf).getOrStore(resolveStart())
  }

  private def resolveStart(): LanceSourceOffset = {
    val start = table.snapshot.version
    options.start match {
      case SourceStart.InitialSnapshot => LanceSourceOffset(start, 0, initialSnapshot = true)
      case SourceStart.Latest => LanceSourceOffset.startOf(start + 1)
      case SourceStart.Version(v) =>
        dataset.checkVersion(v)
        LanceSourceOffset.startOf(v)
      case SourceStart.Timestamp(micros, text) =>
        val listing = dataset.listing()
        val versions = listing.versions.toIndexedSeq
        // Commit times grow with versions: the first at or after `micros`, by bisection.
        var (lo, hi) = (0, versions.size)
        while (lo < hi) {
          val mid = (lo + hi) / 2
          if (listing.snapshot(versions(mid)).commitMicros >= micros) hi = mid else lo = mid + 1
        }
        if (lo == 0 && versions.head > 1) throw new VersionRemovedException(dataset.path, versions.head - 1, versions.head,
          s"; ${LanceSourceOptions.StartingTimestamp} '$text' is before version ${versions.head}, and the versions " +
            s"before it that cleanup removed cannot be read: start at a later time or with ${LanceSourceOptions.StartingVersion} ${versions.head}")
        LanceSourceOffset.startOf(if (lo == versions.size) versions.last + 1 else versions(lo))
    }
  }

  private def rows(v: Long, initial: Boolean, listing: => sparklance.format.table.Dataset#Listing): VersionRows =
    known.getOrElseUpdate((v, initial), if (initial) reader.initial(v, listing) else reader.added(v, listing))

  /** The end of the next batch from `startOffset`: the fragments `limit` admits, at least one; `startOffset` when there are none. */
  override def latestOffset(startOffset: Offset, limit: ReadLimit): Offset = LanceErrors.converting {
    val listing = dataset.listing()
    val last = lastReadable(listing)
    val (maxFiles, maxRows) = LanceSourceOptions.bounds(limit)
    var pos = offset(startOffset)
    var (files, physical) = (0L, 0L)
    while (pos.tableVersion <= last) {
      val fragments = rows(pos.tableVersion, pos.initialSnapshot, listing).fragments
      var i = pos.index.toInt
      while (i < fragments.size) {
        val n = fragments(i).getPhysicalRows
        if (files > 0 && (files + 1 > maxFiles || physical + n > maxRows))
          return LanceSourceOffset(pos.tableVersion, i, pos.initialSnapshot)
        files += 1
        physical += n
        i += 1
      }
      pos = LanceSourceOffset.startOf(pos.tableVersion + 1)
    }
    pos
  }

  /**
   * The fragments from `start` up to `end`, each read as the version that listed it does: a pure
   * function of the two offsets, so a batch Spark replays after a restart reads the same rows.
   */
  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = LanceErrors.converting {
    val (from, to) = (offset(start), offset(end))
    lazy val listing = dataset.listing()
    val columns = readSchema.fieldNames.filterNot(LanceTable.MetadataNames.contains).toSet
    var pos = from
    val splits = Seq.newBuilder[SplitPacking.Sized]
    while (pos.before(to)) {
      val version = rows(pos.tableVersion, pos.initialSnapshot, listing)
      val upTo = if (pos.tableVersion == to.tableVersion) to.index.toInt else version.fragments.size
      version.fragments.slice(pos.index.toInt, upTo).filter(_.getPhysicalRows > 0).foreach { f =>
        val bytes = f.getPhysicalRows * SplitPacking.rowBytes(f, version.snapshot.schema, columns)
        splits += SplitPacking.Sized(FragmentSplit(f.toByteArray, 0, f.getPhysicalRows), bytes.toLong)
      }
      pos = LanceSourceOffset.startOf(pos.tableVersion + 1)
    }
    val all = splits.result()
    if (all.isEmpty) Array.empty else SplitPacking.pack(all, SplitPacking.budget(all.map(_.bytes).sum, all.size))
  }

  override def createReaderFactory(): PartitionReaderFactory = readerFactory()

  /** Versions before `end` are never read again by this run of the query. */
  override def commit(end: Offset): Unit = {
    val done = offset(end)
    known.keys.filter { case (v, _) => v < done.tableVersion }.foreach(known.remove)
  }

  override def stop(): Unit = known.clear()

  override def toString: String = s"LanceMicroBatchStream(${table.tableName})"
}
