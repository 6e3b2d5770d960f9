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
