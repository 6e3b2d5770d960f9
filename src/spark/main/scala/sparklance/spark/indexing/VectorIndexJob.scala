package sparklance.spark.indexing

import org.apache.spark.SparkContext
import org.apache.spark.sql.SparkSession
import scala.util.Using
import sparklance.format.index.vector.build.{VectorColumn, VectorIndexBuild, VectorIndexOptions, VectorIndexSegment, VectorModel,
  VectorTraining}
import sparklance.format.proto.FileProtos
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.table.{BasePaths, LanceField, LanceSchema, Snapshot}
import sparklance.hadoop.Storages
import sparklance.spark.Allocators

/**
 * An IVF index build spread over Spark as pylance's distributed build (LANCE-VECTOR-INDICES.md
 * §8): a job samples at most `options.sampleSize(num_partitions)` vectors (num_partitions · 256,
 * and 65,536 for PQ), which are the only vectors the driver holds; the driver trains the model on
 * them; a second job assigns and encodes every vector, one task a group of fragments, each task
 * writing one segment. The segments share the model and cover disjoint fragments; the caller
 * commits them in one CreateIndex.
 */
object VectorIndexJob {
  /** Rows a task holds encoded before it writes its segment: about this many bytes of payload. */
  private val SegmentBytes = 256L << 20

  final case class Built(model: VectorModel, segments: Seq[IndexMetadata], sampled: Int)

  def build(spark: SparkSession, tableName: String, read: Snapshot, storageConf: Map[String, String], field: LanceField,
      options: VectorIndexOptions, name: String): Built = {
    val sc = spark.sparkContext
    val plan = VectorIndexBuild.plan(read, field, options)
    val fieldBytes = LanceSchema(Seq(field)).toProto.map(_.toByteArray)
    val previous = sc.getLocalProperty("spark.job.description")
    try {
      sc.setJobDescription(s"${options.indexType.name} index $name on $tableName: sampling ${plan.field.name}")
      val samples = sample(sc, read.files, storageConf, plan.samples.map { case (f, n) => (f.toByteArray, n) }, fieldBytes, options.seed)
      val sampled = Array.concat(samples: _*)
      val model = VectorTraining.train(options, plan.dim, sampled, plan.rows)
      val payload = plan.rows * (8L + model.bytesPerRow)
      val tasks = math.max(1, math.min(read.fragments.size.toLong,
        math.max(sc.defaultParallelism.toLong, (payload + SegmentBytes - 1) / SegmentBytes)).toInt)
      val groups = VectorIndexBuild.groups(read.fragments, tasks).map(_.map(_.toByteArray))
      sc.setJobDescription(s"${options.indexType.name} index $name on $tableName: ${groups.size} segment(s)")
      val segments = segment(sc, read.files, storageConf, groups, fieldBytes, model, name, read.version).map(IndexMetadata.parseFrom)
      Built(model, segments, sampled.length / plan.dim)
    } finally sc.setJobDescription(previous)
  }

  private def fieldOf(bytes: Seq[Array[Byte]]): LanceField =
    LanceSchema.fromProto(bytes.map(FileProtos.Field.parseFrom), java.util.Map.of()).fields.head

  // Separate so the closures Spark ships capture only these serializable values.
  private def sample(sc: SparkContext, files: BasePaths, storageConf: Map[String, String], picks: Seq[(Array[Byte], Int)],
      fieldBytes: Seq[Array[Byte]], seed: Long): Array[Array[Float]] =
    sc.parallelize(picks.zipWithIndex, math.max(1, picks.size)).map { case ((bytes, count), i) =>
      val fragment = DataFragment.parseFrom(bytes)
      val field = fieldOf(fieldBytes)
      Using.resource(Allocators.child(s"vector sample of ${field.name} in ${files.tablePath} fragment ${fragment.getId}")) { allocator =>
        VectorColumn.sample(Storages.forPath(files.tablePath, storageConf), files, fragment, field, count, seed + i, allocator)
      }
    }.collect()

  private def segment(sc: SparkContext, files: BasePaths, storageConf: Map[String, String], groups: Seq[Seq[Array[Byte]]],
      fieldBytes: Seq[Array[Byte]], model: VectorModel, name: String, readVersion: Long): Seq[Array[Byte]] =
    sc.parallelize(groups, math.max(1, groups.size)).map { bytes =>
      val fragments = bytes.map(DataFragment.parseFrom)
      val field = fieldOf(fieldBytes)
      Using.resource(Allocators.child(s"vector index segment of ${field.name} in ${files.tablePath}")) { allocator =>
        VectorIndexSegment.build(Storages.forPath(files.tablePath, storageConf), files, fragments, field, model, name, readVersion,
          allocator).toByteArray
      }
    }.collect().toSeq
}
