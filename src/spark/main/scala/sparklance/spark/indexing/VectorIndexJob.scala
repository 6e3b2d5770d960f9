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
    val (model, sampled) = train(spark, tableName, read, storageConf, field, options, name)
    Built(model, encode(spark, tableName, read, storageConf, field, model, name, read.fragments, read.version, oneSegment = false), sampled)
  }

  /** The model trained on a sample of the column read by a Spark job, and how many vectors the sample held. */
  def train(spark: SparkSession, tableName: String, read: Snapshot, storageConf: Map[String, String], field: LanceField,
      options: VectorIndexOptions, name: String): (VectorModel, Int) = {
    val sc = spark.sparkContext
    val plan = VectorIndexBuild.plan(read, field, options)
    described(sc, s"${options.indexType.name} index $name on $tableName: sampling ${plan.field.name}") {
      val samples = sample(sc, read.files, storageConf, plan.samples.map { case (f, n) => (f.toByteArray, n) }, fieldBytes(field), options.seed)
      val sampled = Array.concat(samples: _*)
      (VectorTraining.train(options, plan.dim, sampled, plan.rows), sampled.length / plan.dim)
    }
  }

  /**
   * The segments of index `name` over `fragments` encoded with `model` by a Spark job, one task
   * (and segment) a group of fragments, or one for all with `oneSegment` (a merge); their
   * `dataset_version` is `datasetVersion`.
   */
  def encode(spark: SparkSession, tableName: String, read: Snapshot, storageConf: Map[String, String], field: LanceField,
      model: VectorModel, name: String, fragments: Seq[DataFragment], datasetVersion: Long, oneSegment: Boolean): Seq[IndexMetadata] = {
    val sc = spark.sparkContext
    val rows = fragments.map(VectorIndexBuild.liveRows).sum
    val payload = rows * (8L + model.bytesPerRow)
    val tasks = if (oneSegment) 1 else math.max(1, math.min(fragments.size.toLong,
      math.max(sc.defaultParallelism.toLong, (payload + SegmentBytes - 1) / SegmentBytes)).toInt)
    val groups = VectorIndexBuild.groups(fragments, tasks).map(_.map(_.toByteArray))
    described(sc, s"${model.indexType.name} index $name on $tableName: ${groups.size} segment(s)") {
      segment(sc, read.files, storageConf, groups, fieldBytes(field), model, name, datasetVersion).map(IndexMetadata.parseFrom)
    }
  }

  private def described[T](sc: SparkContext, description: String)(body: => T): T = {
    val previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(description)
    try body finally sc.setJobDescription(previous)
  }

  private def fieldBytes(field: LanceField): Seq[Array[Byte]] = LanceSchema(Seq(field)).toProto.map(_.toByteArray)

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
