package sparklance.spark.scan

import java.util.OptionalLong
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, BoundReference, Expression}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.read._
import org.apache.arrow.vector.types.pojo.ArrowType
import org.apache.spark.sql.types.{ArrayType, DataType, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation
import scala.jdk.CollectionConverters._
import scala.util.Using
import org.roaringbitmap.RoaringBitmap
import sparklance.format.deletion.{DeletionFiles, PortableBitmaps}
import sparklance.format.file.DataFileReader
import sparklance.format.index.Indices
import sparklance.format.skipping.{ColumnFilter, DataSkipping}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.rowids.RowLineage
import sparklance.format.table.{ColumnShare, LanceField, RowAddress, Snapshot}
import sparklance.spark.{Allocators, LanceTable}
import sparklance.spark.errors.LanceErrors

/**
 * A columnar scan of one snapshot: each fragment is a split, or several row ranges of equal size
 * where it holds more than a partition's budget of the columns read or more than `split_rows`
 * rows, and splits are packed into input partitions by Spark's rule for files ([[SplitPacking]]);
 * `fragmentIds` restricts the fragments, and with a `limit` only as many fragments are planned as
 * hold that many live rows, each reader stopping after `limit` rows. With a `condition` (conjuncts of
 * the query's filter on some of the columns read) the reader evaluates it on its own columns first
 * and decodes the others only for the rows it keeps ([[Prefilter]]).
 */
class LanceScan(table: LanceTable, required: StructType, options: CaseInsensitiveStringMap,
    fragmentIds: Option[Set[Long]], limit: Option[Int], rowIds: Option[Set[Long]] = None,
    dataFilter: Option[ColumnFilter] = None, pushed: Seq[Predicate] = Nil, nullFilled: Set[String] = Set.empty,
    val condition: Option[Expression] = None)
    extends Scan with Batch with SupportsReportStatistics with ReadsTable {

  override val read: TableRead = TableRead(table, pushed)

  protected val snapshot: Snapshot = table.snapshot

  /**
   * For `_rowid` predicates: the offsets of the named rows, per fragment, found with the row id
   * index (without stable row ids a row id is the row address, and one past its fragment's last
   * row names no row).
   */
  private lazy val namedRows: Option[Map[Long, RoaringBitmap]] = rowIds.map { ids =>
    val addresses =
      if (snapshot.stableRowIds) {
        val index = RowLineage.index(table.dataset.storage, snapshot)
        ids.toSeq.map(index.address).filter(_ != -1L)
      } else ids.toSeq
    val physicalRows = snapshot.fragments.map(f => f.getId -> f.getPhysicalRows).toMap
    addresses.groupBy(RowAddress.fragmentId).flatMap { case (fragment, as) =>
      val rows = RoaringBitmap.bitmapOf(as.map(a => RowAddress.offset(a).toInt): _*)
      rows.remove(physicalRows.getOrElse(fragment, 0L), 1L << 32)
      if (rows.isEmpty) None else Some(fragment -> rows)
    }
  }

  // Live rows per fragment id; a deletion file whose count the manifest lacks is read once.
  private val live = scala.collection.concurrent.TrieMap.empty[Long, Long]
  private def liveRows(f: DataFragment): Long = live.getOrElseUpdate(f.getId, snapshot.liveRows(table.dataset.storage, f))

  /**
   * `nullFilled`: columns of unmappable Lance types (VOID in Spark) that a row-level statement
   * carries along without reading or writing them; they are not decoded, but handed over as NULLs.
   */

  /** The fragments this scan reads. */
  protected def fragments: Seq[DataFragment] = {
    val named = namedRows.fold(snapshot.fragments)(rows => snapshot.fragments.filter(f => rows.contains(f.getId)))
    val selected = fragmentIds.fold(named)(ids => named.filter(f => ids.contains(f.getId)))
    limit.fold(selected) { n =>
      val before = selected.map(liveRows).scanLeft(0L)(_ + _)
      selected.zip(before).takeWhile { case (_, before) => before < n }.map(_._1)
    }
  }
  private val rowsPerSplit: Long = Option(options.get("split_rows")).map(_.toLong).getOrElse(LanceScan.DefaultSplitRows)

  override def readSchema(): StructType = required
  override def toBatch: Batch = this
  override def description(): String =
    s"LanceScan ${table.tableName} v${snapshot.version} [${required.fieldNames.mkString(", ")}]" + textMatches +
      condition.fold("")(c => s" reading other columns where ${c.transform { case a: AttributeReference => a.withQualifier(Nil) }.sql}")

  /** The text matches the scan reads through an INVERTED index, for EXPLAIN. */
  private def textMatches: String = {
    def leaves(f: ColumnFilter): Seq[ColumnFilter.TextMatch] = f match {
      case ColumnFilter.And(l, r) => leaves(l) ++ leaves(r)
      case ColumnFilter.Or(l, r) => leaves(l) ++ leaves(r)
      case ColumnFilter.Not(c) => leaves(c)
      case m: ColumnFilter.TextMatch => Seq(m)
      case _ => Nil
    }
    dataFilter.toSeq.flatMap(leaves).collect { case ColumnFilter.TextMatch(id, query, _, Some(index)) =>
      val column = snapshot.schema.allFields.find(_.id == id).map(_.name).getOrElse(id.toString)
      s" lance_match($column, '$query') by INVERTED index $index"
    }.distinct.mkString
  }

  override def columnarSupportMode(): Scan.ColumnarSupportMode = Scan.ColumnarSupportMode.SUPPORTED

  override def supportedCustomMetrics(): Array[org.apache.spark.sql.connector.metric.CustomMetric] = ScanMetrics.supported

  /** A filter Spark found only at run time (a row-level statement's source keys), kept with the pushed one. */
  @volatile private var runtimeFilter: Option[ColumnFilter] = None
  protected def restrictTo(filter: ColumnFilter): Unit =
    runtimeFilter = Some(runtimeFilter.fold(filter)(ColumnFilter.And(_, filter)))

  // Spark plans the partitions before and after handing over runtime filters: each filter's
  // candidates are found once.
  private var lastCandidates: Option[(Option[ColumnFilter], Map[Long, RoaringBitmap])] = None

  /**
   * The offsets that may hold rows the pushed and runtime filters keep, for the fragments the
   * table's scalar indices let skip rows of (see [[DataSkipping]]); the read option
   * `data_skipping = false` turns this off.
   */
  private def candidates: Map[Long, RoaringBitmap] = synchronized {
    val filter = (dataFilter ++ runtimeFilter).reduceOption(ColumnFilter.And(_, _))
    lastCandidates.filter(_._1 == filter).map(_._2).getOrElse {
      val found = filter match {
        case Some(f) if options.getBoolean(LanceScan.DataSkippingOption, true) && snapshot.file.indexSection.isDefined =>
          val kept = withDataSkipping(snapshot.fragments)(_.candidates(f))
          // Indices describe rows as written: where the rows kept may all have been deleted since
          // (rewritten by an UPDATE or MERGE, say), by the manifest's count, the deletion file is
          // read here so that a fragment left with none is not planned. Otherwise the reader skips
          // deleted rows itself, and the driver reads no deletion file.
          snapshot.fragments.iterator.flatMap { fragment =>
            kept.get(fragment.getId).map { rows =>
              val deleted = fragment.getDeletionFile.getNumDeletedRows
              if (deleted == 0 || rows.isEmpty || deleted < rows.getLongCardinality) fragment.getId -> rows
              else fragment.getId -> RoaringBitmap.andNot(rows, DeletionFiles.read(table.dataset.storage, snapshot.files, fragment))
            }
          }.toMap
        case _ => Map.empty[Long, RoaringBitmap]
      }
      lastCandidates = Some(filter -> found)
      found
    }
  }

  /**
   * The live rows `filter` (exactly a predicate of the query) keeps in each fragment this scan
   * reads whose every row the table's indices decide (see [[DataSkipping.counted]]); empty when the
   * scan names rows, stops at a limit, or has data skipping turned off.
   */
  def countedByIndices(filter: ColumnFilter): Map[Long, Long] = LanceErrors.converting {
    if (rowIds.isDefined || limit.isDefined || !options.getBoolean(LanceScan.DataSkippingOption, true) ||
        snapshot.file.indexSection.isEmpty) Map.empty
    else withDataSkipping(fragments)(_.counted(filter))
  }

  /** `f` of the table's indices over `of` (the snapshot has an index section). */
  private def withDataSkipping[T](of: Seq[DataFragment])(f: DataSkipping => T): T = {
    val indices = Indices.parse(snapshot.file.indexSection, s"${table.tableName} version ${snapshot.version}")
    Using.resource(Allocators.child(s"index reads of ${table.tableName}")) { allocator =>
      f(new DataSkipping(table.dataset.storage, snapshot.files, snapshot.schema, indices, of, snapshot.stableRowIds, allocator))
    }
  }

  /** The table's schema, as data skipping names its columns. */
  def tableSchema: sparklance.format.table.LanceSchema = snapshot.schema

  /** How many fragments the scan reads (before data skipping). */
  def fragmentCount: Int = fragments.size

  /** This scan without the fragments `counted`: what a COUNT must still read of the table. */
  def without(counted: Set[Long]): LanceScan = new LanceScan(table, required, options,
    Some(fragments.map(_.getId).toSet -- counted), limit, rowIds, dataFilter, pushed, nullFilled, condition)

  /** Whether the readers of all the table's data files pick scattered rows ([[DataFileReader.picksRows]]). */
  def picksRows: Boolean = snapshot.fragments.forall(_.getFilesList.asScala.forall(f =>
    DataFileReader.picksRows(f.getFileMajorVersion, f.getFileMinorVersion, table.dataset.storage.readsCheaply)))

  /** This scan, evaluating `condition` first ([[ScanPrefilterStrategy]]). */
  def withCondition(condition: Expression): LanceScan = new LanceScan(table, required, options, fragmentIds, limit,
    rowIds, dataFilter, pushed, nullFilled, Some(condition))

  override def planInputPartitions(): Array[InputPartition] = LanceErrors.converting {
    val candidates = this.candidates
    val read = fragments.filter(f => liveRows(f) > 0 && !candidates.get(f.getId).exists(_.isEmpty))
    // Each fragment's rows that may be read (those named by _rowid, else those data skipping
    // kept, else all) and their bytes; the budget for a partition follows from their sum. The
    // reader skips the deleted ones among them: a row named by its id may have been deleted.
    final case class Wanted(f: DataFragment, rows: Option[RoaringBitmap], perRow: Double) {
      val bytes: Long = (rows.fold(f.getPhysicalRows)(_.getLongCardinality) * perRow).toLong
    }
    val wanted = read.map(f => Wanted(f, namedRows.flatMap(_.get(f.getId)).orElse(candidates.get(f.getId)), rowBytes(f)))
    val budget = SplitPacking.budget(wanted.map(_.bytes).sum, wanted.size)
    val splits = wanted.flatMap { w =>
      import w._
      val message = f.toByteArray
      // Splits span the kept rows only, and splits holding none of them are not planned.
      val (first, last) = rows.fold((0L, f.getPhysicalRows))(FragmentSplit.span)
      val within = rows.map(PortableBitmaps.toBytes)
      val pieces = Seq(1L, SplitPacking.ceilDiv(bytes, budget.maxBytes), SplitPacking.ceilDiv(last - first, rowsPerSplit)).max
      val step = SplitPacking.ceilDiv(last - first, pieces)
      (first until last by step).map(start => (start, math.min(last, start + step)))
        .filter { case (start, end) => rows.forall(_.intersects(start, end)) }
        .map { case (start, end) =>
          val kept = rows.fold(end - start)(_.rangeCardinality(start, end))
          SplitPacking.Sized(FragmentSplit(message, start, end, within = within), (kept * perRow).toLong)
        }
    }
    SplitPacking.pack(splits, budget, limit)
  }

  /** Bytes per row of the columns read in fragment `f`, blob sidecars included. */
  private def rowBytes(f: DataFragment): Double =
    SplitPacking.rowBytes(f, readShare) + readBlobBytesPerRow

  private lazy val readShare = new ColumnShare.Estimate(snapshot.schema, readColumns)

  /** Sidecar bytes per row of the blob columns read (the data files' sizes do not hold them). */
  private lazy val readBlobBytesPerRow: Double =
    if (snapshot.schema.fields.exists(f => readColumns(f.name) && f.blobEncoding.isDefined)) table.blobBytesPerRow else 0.0

  private lazy val readColumns: Set[String] =
    required.fields.map(_.name).filterNot(n => LanceTable.MetadataNames.contains(n) || nullFilled(n)).toSet

  /** A stream of the rows the table's new versions append (see [[sparklance.spark.streaming.LanceMicroBatchStream]]). */
  override def toMicroBatchStream(checkpointLocation: String): streaming.MicroBatchStream =
    LanceErrors.convertingArguments(sparklance.spark.errors.LanceErrorCondition.InvalidOption) {
      val session = org.apache.spark.sql.SparkSession.active
      val parsed = sparklance.spark.streaming.LanceSourceOptions.parse(options, session)
      // The change-data stream is built by the scan builder; here it would silently be an append stream.
      if (parsed.readChangeFeed) throw new IllegalArgumentException(
        s"Option ${sparklance.spark.streaming.LanceSourceOptions.ReadChangeFeed}: this scan of ${table.tableName} streams appended rows only")
      new sparklance.spark.streaming.LanceMicroBatchStream(table, required, () => createReaderFactory(), parsed, checkpointLocation,
        session.sessionState.newHadoopConf())
    }

  override def createReaderFactory(): PartitionReaderFactory = {
    val dataFields = required.fields.filterNot(f => LanceTable.MetadataNames.contains(f.name) || nullFilled(f.name))
    val lanceFields = dataFields.map(f => LanceScan.prune(snapshot.schema.field(f.name).getOrElse(
      throw new IllegalStateException(s"Column ${f.name} is not in ${table.tableName}")), f.dataType))
    new LanceReaderFactory(ReadTarget(table.tableName, snapshot.files, lanceFields.toSeq, required,
      table.settings.storageConf, table.settings.readBatchBytes, prefilter, keyFilters))
  }

  /** `condition`, on columns of plain types, bound to the columns the reader decodes first. */
  private def prefilter: Option[Prefilter] = condition.map { c =>
    val columns = c.references.toSeq.map(_.name).distinct
    val schema = StructType(columns.map(name => required(name)))
    val fields = schema.fields.map(f => LanceScan.prune(snapshot.schema.field(f.name).getOrElse(
      throw new IllegalStateException(s"Column ${f.name} is not in ${table.tableName}")), f.dataType))
    val bound = c.transform { case a: AttributeReference => BoundReference(columns.indexOf(a.name), a.dataType, a.nullable) }
    Prefilter(ReadTarget.encode(fields.toSeq), schema, sparklance.spark.rowlevel.InListKeySetRule.keyTested(bound))
  }

  /** The key sets a row-level statement's reader keeps only the rows of (runtime filters it applies exactly). */
  protected def keyFilters: Seq[KeySetFilter] = Nil

  override def estimateStatistics(): Statistics = {
    val rows = snapshot.fragments.map(liveRows).sum
    val bytes = snapshot.fragments.flatMap(_.getFilesList.asScala).map(_.getFileSizeBytes).sum +
      (readBlobBytesPerRow * snapshot.fragments.map(_.getPhysicalRows).sum).toLong
    new Statistics {
      override def numRows(): OptionalLong = OptionalLong.of(rows)
      override def sizeInBytes(): OptionalLong = OptionalLong.of(math.max(bytes, 1L))
    }
  }
}

object LanceScan {
  val DefaultSplitRows: Long = 1L << 20
  /** The read option that turns data skipping off (`false`), to compare results or timings. */
  val DataSkippingOption = "data_skipping"

  /**
   * `relation` reading `replacement` in place of its Lance scan. Through `makeCopy`: the relation's
   * constructor differs between the Spark versions supported.
   */
  def inRelation(relation: DataSourceV2ScanRelation, replacement: LanceScan): DataSourceV2ScanRelation =
    relation.makeCopy(relation.productIterator.map {
      case _: LanceScan => replacement
      case other => other.asInstanceOf[AnyRef]
    }.toArray).asInstanceOf[DataSourceV2ScanRelation]

  /**
   * Keeps only the nested fields Spark asked for (nested schema pruning), so the reader decodes
   * just those children's columns.
   */
  def prune(field: LanceField, requested: DataType): LanceField = (requested, field.arrowType) match {
    case (StructType(wanted), _: ArrowType.Struct) =>
      field.copy(children = wanted.toSeq.map(w => prune(field.children.find(_.name == w.name).getOrElse(
        throw new IllegalStateException(s"No field ${w.name} in ${field.name}")), w.dataType)))
    case (ArrayType(element, _), _: ArrowType.List | _: ArrowType.LargeList) =>
      field.copy(children = Seq(prune(field.children.head, element)))
    case _ => field
  }
}
