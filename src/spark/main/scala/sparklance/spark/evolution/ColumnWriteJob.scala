package sparklance.spark.evolution

import org.apache.spark.sql.SparkSession
import sparklance.format.proto.FileProtos
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}
import sparklance.format.table.{Dataset, LanceSchema, Snapshot}
import sparklance.hadoop.Storages
import sparklance.spark.{Allocators, CatalogSettings}

/**
 * Writes Lance's column-only data files (one per fragment, holding some columns for all its
 * physical rows) as one Spark job; the driver commits them.
 */
object ColumnWriteJob {
  /**
   * Writes column-only files from `frame`: its first two columns are `_fragid` and `_rowaddr` of
   * live rows of `snapshot`, the rest the values of `fields` (in order) for those rows. One task
   * per partition of the rows grouped by fragment and sorted by address; offsets without a row
   * (deleted ones) are NULL. Returns the file of each fragment that has rows.
   */
  def fromRows(spark: SparkSession, tableName: String, dataset: Dataset, snapshot: Snapshot, frame: org.apache.spark.sql.DataFrame,
      fields: LanceSchema, settings: CatalogSettings): Map[Long, DataFile] = {
    import org.apache.spark.sql.functions.col
    val physical = snapshot.fragments.map(f => f.getId -> f.getPhysicalRows).toMap
    val types = frame.schema.fields.drop(2).map(_.dataType).toSeq
    val target = fields.toProto.map(_.toByteArray).toArray
    val (path, version, conf, storageVersion) = (dataset.path, snapshot.version, settings.storageConf, snapshot.storageVersion)
    val sorted = frame.repartition(col(frame.columns(0))).sortWithinPartitions(frame.columns(0), frame.columns(1))
    val sc = spark.sparkContext
    val previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(s"write ${fields.fields.map(_.name).mkString(", ")} of $tableName as column files")
    try sorted.queryExecution.toRdd.mapPartitions { rows =>
      val storage = Storages.forPath(path, conf)
      val schema = LanceSchema.fromProto(target.toSeq.map(FileProtos.Field.parseFrom), java.util.Map.of())
      val allocator = Allocators.child(s"column files of $path")
      val written = Seq.newBuilder[(Long, Array[Byte])]
      var current: Option[(Long, ColumnFileSink)] = None
      def close(): Unit = current.foreach { case (id, sink) =>
        try written += id -> sink.finish().toByteArray finally sink.close()
        current = None
      }
      try {
        rows.foreach { row =>
          val fragment = row.getInt(0).toLong
          if (!current.exists(_._1 == fragment)) {
            close()
            val rowsOf = physical.getOrElse(fragment, throw new IllegalStateException(s"fragment $fragment is not in $path version $version"))
            current = Some(fragment -> new ColumnFileSink(tableName, storage, path, schema, storageVersion, rowsOf, types, allocator))
          }
          val values = new org.apache.spark.sql.catalyst.expressions.GenericInternalRow(
            types.indices.map(i => row.get(i + 2, types(i))).toArray[Any])
          current.get._2.append(row.getLong(1) & 0xFFFFFFFFL, values)
        }
        close()
        written.result().iterator
      } catch { case e: Throwable => current.foreach { case (_, sink) => sink.abort(); sink.close() }; throw e }
      finally allocator.close()
    }.collect().map { case (id, bytes) => id -> DataFile.parseFrom(bytes) }.toMap
    finally sc.setJobDescription(previous)
  }
}
