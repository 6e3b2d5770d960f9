package sparklance.spark.evolution

import org.apache.spark.sql.SparkSession
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.Resources
import sparklance.format.proto.FileProtos
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}
import sparklance.format.table.{ColumnFile, Dataset, LanceSchema, SchemaEvolution, Snapshot, Widening}
import sparklance.hadoop.Storages
import sparklance.spark.{Allocators, CatalogSettings}

/**
 * Writes column-only files ([[ColumnFile]]) for every fragment of a table as one Spark job, a
 * task per fragment: the values of columns whose type changed, as their new type. Tasks travel
 * as protobuf bytes and open the version themselves; the driver commits.
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

  def retype(spark: SparkSession, tableName: String, dataset: Dataset, snapshot: Snapshot,
      retyped: Seq[SchemaEvolution.Retyped], settings: CatalogSettings): Map[Long, DataFile] = {
    val target = LanceSchema(retyped.map(_.to)).toProto.map(_.toByteArray).toArray
    val sources = retyped.map(_.from.id).toArray
    val work = snapshot.fragments.map(f => (f.getId, f.toByteArray))
    run(spark, s"change the type of ${retyped.map(_.from.name).mkString(", ")} in $tableName", dataset.path, snapshot.version,
      settings.storageConf, work, sources, target).toMap.map { case (id, bytes) => id -> DataFile.parseFrom(bytes) }
  }

  // Separate from `retype` so the closure Spark ships captures only these serializable values.
  private def run(spark: SparkSession, description: String, path: String, version: Long, storageConf: Map[String, String],
      work: Seq[(Long, Array[Byte])], sourceIds: Array[Int], targetFields: Array[Array[Byte]]): Array[(Long, Array[Byte])] = {
    val sc = spark.sparkContext
    val previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(description)
    try sc.parallelize(work, math.max(1, work.size)).map { case (id, bytes) =>
      val storage = Storages.forPath(path, storageConf)
      val snapshot = new Dataset(storage, path).snapshot(Some(version))
      val target = LanceSchema.fromProto(targetFields.toSeq.map(FileProtos.Field.parseFrom), java.util.Map.of())
      val sources = sourceIds.toSeq.map(i => snapshot.schema.fields.find(_.id == i).getOrElse(
        throw new IllegalStateException(s"field id $i is not a top-level column of $path version $version")))
      val file = Using.resource(Allocators.child(s"$description, fragment $id")) { allocator =>
        ColumnFile.write(storage, snapshot, DataFragment.parseFrom(bytes), sources, target, allocator) { vectors =>
          try vectors.zip(target.fields).map { case (v, to) => Widening.cast(v, to.name, to.nullable, to.arrowType, allocator) }
          finally Resources.closeAll(vectors)
        }
      }
      id -> file.toByteArray
    }.collect()
    finally sc.setJobDescription(previous)
  }
}
