package sparklance.spark.layout

import org.apache.spark.RangePartitioner
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types._
import scala.collection.mutable.ArrayBuilder
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal
import sparklance.format.LanceException
import sparklance.format.commit.Operation
import sparklance.format.io.Storage
import sparklance.format.maintenance.{Compaction, CompactionTask}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.rowids.RowLineage
import sparklance.format.skipping.{WrittenZones, ZoneColumn}
import sparklance.format.table.{Dataset, FragmentWriter, Snapshot}
import sparklance.spark.{Allocators, CatalogSettings, LanceTable}
import sparklance.spark.write.{FragmentSink, WriteTarget}

/**
 * Compaction tasks that lay their rows out anew: each task's live rows are read by Spark at the
 * planned version, range-partitioned and sorted by the layout's key into as many partitions as the
 * task has output fragments, and each partition is written as one new fragment. So rows move
 * across all of a task's fragments, not only within one, and the zone maps of the new fragments
 * cover narrow ranges of the layout's columns. On a table with stable row ids each row keeps its
 * id and versions (read with it, written into the new fragments' lineage).
 */
object LayoutRewrite {
  /** Rows sampled per task to place the curve's ranks (Delta samples in the same order of magnitude). */
  private val SampleRows = 200000L

  def runner(spark: SparkSession, tableName: String, layout: RowLayout, settings: CatalogSettings): Compaction.TaskRunner =
    (dataset, snapshot, tasks, zoneColumns) => tasks.map(rewrite(spark, tableName, dataset, snapshot, _, layout, zoneColumns, settings))

  /**
   * Why `columns` cannot order the rows of a table of `schema`, naming the first column the table
   * lacks or whose values have no order; None when they can.
   */
  def unusable(tableName: String, schema: StructType, columns: Seq[String]): Option[String] =
    if (columns.isEmpty) Some("no column given")
    else if (columns.distinct.size != columns.size) Some(s"a column is named twice in ${columns.mkString(", ")}")
    else columns.iterator.map { name =>
      schema.fields.find(_.name == name) match {
        case None => Some(s"$tableName has no top-level column '$name' (columns: ${schema.fieldNames.mkString(", ")})")
        case Some(f) if !orderable(f.dataType) => Some(s"rows cannot be ordered by '$name' of type ${f.dataType.sql}: " +
          "numbers, strings, binary, booleans, dates and timestamps can")
        case _ => None
      }
    }.collectFirst { case Some(why) => why }

  private def orderable(t: DataType): Boolean = t match {
    case _: NumericType | _: StringType | BinaryType | BooleanType | DateType | TimestampType | TimestampNTZType => true
    case _ => false
  }

  private def rewrite(spark: SparkSession, tableName: String, dataset: Dataset, snapshot: Snapshot, task: CompactionTask,
      layout: RowLayout, zoneColumns: Seq[ZoneColumn], settings: CatalogSettings): Operation.RewriteGroup = {
    val data = snapshot.schema.fields.map(_.name)
    val lineage = if (snapshot.stableRowIds) Seq(LanceTable.RowId, LanceTable.CreatedAtVersion, LanceTable.LastUpdatedAtVersion) else Nil
    val rows = spark.read.option("versionAsOf", snapshot.version.toString).table(tableName)
      .where(col(LanceTable.FragmentId).isin(task.fragmentIds.map(_.toInt): _*))
    val selected = rows.select((data ++ lineage).map(n => col(quote(n))): _*)
    val partitions = math.max(1, task.outputRows.size)
    val arranged: RDD[InternalRow] = layout match {
      case RowLayout.Linear(columns) =>
        val keys = columns.map(c => col(quote(c)))
        selected.repartitionByRange(partitions, keys: _*).sortWithinPartitions(keys: _*).queryExecution.toRdd
      case RowLayout.Curved(curve, columns) =>
        val key = CurveKey(curve, columns.map(data.indexOf), columns.map(c => selected.schema(c).dataType), boundaries(selected, columns, task.liveRows))
        val keyed = selected.queryExecution.toRdd.map(row => (key.of(row), row.copy()))
        keyed.repartitionAndSortWithinPartitions(new RangePartitioner(partitions, keyed)).values
    }
    val target = WriteTarget.of(tableName, snapshot, settings).copy(maxRowsPerFile = FragmentWriter.MaxRowsPerFile, zoneColumns = zoneColumns)
    val types = data.map(n => selected.schema(n).dataType)
    val stable = snapshot.stableRowIds
    val sc = spark.sparkContext
    val previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(s"compact $tableName: ${layout.describe}, fragments ${task.fragmentIds.mkString(", ")} of version ${snapshot.version}")
    val written = try arranged.mapPartitions(part => Iterator(writePartition(target, types, stable, part))).collect()
      finally sc.setJobDescription(previous)
    val created = written.toSeq.flatMap(_._1).map(DataFragment.parseFrom)
    val zones = written.map(_._2).foldLeft(WrittenZones.Empty)(_ ++ _)
    val rowsWritten = created.map(_.getPhysicalRows).sum
    if (rowsWritten != task.liveRows) {
      delete(dataset.storage, dataset.path, created)
      throw new LanceException(s"Compaction of $tableName read $rowsWritten live rows from fragments " +
        s"${task.fragmentIds.mkString(", ")}, whose metadata promises ${task.liveRows}")
    }
    Operation.RewriteGroup(task.fragments, created, zones)
  }

  /** One partition's rows as one new fragment (none when it has no rows), with the lineage it carries. */
  private def writePartition(target: WriteTarget, types: Seq[DataType], stable: Boolean, rows: Iterator[InternalRow])
      : (Seq[Array[Byte]], WrittenZones) = {
    val allocator = Allocators.child(s"layout rewrite of ${target.tablePath}")
    val sink = new FragmentSink(target, types, allocator)
    val ids, createdAt, updatedAt = new ArrayBuilder.ofLong
    val lineageAt = types.size
    try {
      rows.foreach { row =>
        sink.append(row)
        if (stable) { ids += row.getLong(lineageAt); createdAt += row.getLong(lineageAt + 1); updatedAt += row.getLong(lineageAt + 2) }
      }
      val fragments = sink.finish()
      val placed = if (stable) RowLineage.moved(fragments, ids.result(), createdAt.result(), updatedAt.result()) else fragments
      (placed.map(_.toByteArray), sink.zones)
    } catch { case NonFatal(e) => sink.abort(); throw e }
    finally { sink.close(); allocator.close() }
  }

  /**
   * Each curve column's rank boundaries: quantiles of a sample of the task's rows (Spark's
   * internal values, in Spark's order for the type), so that ranks split the rows evenly.
   */
  private def boundaries(rows: DataFrame, columns: Seq[String], liveRows: Long): Seq[Array[Any]] = {
    val projected = rows.select(columns.map(c => col(quote(c))): _*)
    val fraction = if (liveRows <= SampleRows) 1.0 else SampleRows.toDouble / liveRows
    val sample = projected.sample(withReplacement = false, fraction, seed = 17L).queryExecution.toRdd.map(_.copy()).collect()
    val count = Curve.boundaryCount(columns.size)
    columns.indices.map { i =>
      val dataType = projected.schema(i).dataType
      val ordering = TypeUtils.getInterpretedOrdering(dataType)
      val values = sample.iterator.filterNot(_.isNullAt(i)).map(_.get(i, dataType)).toIndexedSeq.sorted(ordering)
      RowLayout.quantiles(values, count, ordering)
    }
  }

  private def quote(name: String): String = s"`${name.replace("`", "``")}`"

  private def delete(storage: Storage, tablePath: String, fragments: Seq[DataFragment]): Unit =
    for (f <- fragments; file <- f.getFilesList.asScala)
      try storage.delete(Storage.join(tablePath, s"data/${file.getPath}")) catch { case NonFatal(_) => }
}
