package sparklance.format.index.vector.build

import org.apache.arrow.memory.BufferAllocator
import sparklance.format.commit.{CommitRecord, CommitResult, CommitRetries, Statement}
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.skipping.ZoneMapSegment
import sparklance.format.table.{Dataset, LanceField, Snapshot}

/**
 * The steps of building an IVF index on a vector column, which a single process runs one after the
 * other ([[run]]) and Spark spreads over tasks: [[plan]] (the partition count and how many sample
 * rows to read from each fragment), sampling ([[VectorColumn.sample]]), training on the sample
 * ([[VectorTraining]]), one segment a group of fragments ([[VectorIndexSegment.build]]), and one
 * CreateIndex committing every segment in place of the index's old ones.
 */
object VectorIndexBuild {
  /** `samples` = (fragment, rows to sample from it); at most `options.sampleSize(partitions)` in all. */
  final case class Plan(field: LanceField, dim: Int, rows: Long, partitions: Int, samples: Seq[(DataFragment, Int)])

  def liveRows(fragment: DataFragment): Long =
    fragment.getPhysicalRows - (if (fragment.hasDeletionFile) fragment.getDeletionFile.getNumDeletedRows else 0L)

  def plan(read: Snapshot, field: LanceField, options: VectorIndexOptions): Plan = {
    val dim = VectorColumn.dimension(field).getOrElse(throw new IllegalArgumentException(
      s"${options.indexType.name} index: column '${field.name}' of type ${field.arrowType} is not a vector column " +
        "(fixed_size_list<float32>[d]; in Spark an ARRAY<FLOAT> with the table property '<column>.arrow.fixed-size-list.size')"))
    options.validate(dim)
    val rows = read.fragments.map(liveRows).sum
    val partitions = options.partitions(rows)
    val wanted = math.min(rows, options.sampleSize(partitions))
    val samples = read.fragments.filter(liveRows(_) > 0).map { f =>
      f -> math.min(f.getPhysicalRows, math.ceil(wanted.toDouble * liveRows(f) / rows).toLong).toInt
    }
    Plan(field, dim, rows, partitions, samples)
  }

  /** `fragments` in at most `groups` runs of consecutive fragments with about equal row counts. */
  def groups(fragments: Seq[DataFragment], groups: Int): Seq[Seq[DataFragment]] = {
    val total = math.max(1L, fragments.map(liveRows).sum)
    val per = math.max(1L, (total + groups - 1) / groups)
    val out = Seq.newBuilder[Seq[DataFragment]]
    var current = Vector.empty[DataFragment]
    var rows = 0L
    fragments.foreach { f =>
      current :+= f
      rows += liveRows(f)
      if (rows >= per) { out += current; current = Vector.empty; rows = 0 }
    }
    if (current.nonEmpty) out += current
    out.result()
  }

  /** The index's current segments called `name`, which a new build replaces; refused if that name is another kind of index. */
  def replaced(existing: Seq[IndexMetadata], name: String, field: LanceField, where: String): Seq[IndexMetadata] = {
    val same = existing.filter(_.getName == name)
    same.find(i => !VectorIndexSegment.isVector(i) || i.getFieldsCount != 1 || i.getFields(0) != field.id).foreach { other =>
      throw new IllegalArgumentException(s"$where: an index '$name' already exists and is not a vector index of " +
        s"'${field.name}'; drop it first or choose another name")
    }
    same
  }

  /** Samples the column and trains the model in this process. */
  def train(storage: Storage, read: Snapshot, field: LanceField, options: VectorIndexOptions, allocator: BufferAllocator): VectorModel = {
    val plan = VectorIndexBuild.plan(read, field, options)
    val sample = plan.samples.zipWithIndex.map { case ((f, n), i) =>
      VectorColumn.sample(storage, read.files, f, field, n, options.seed + i, allocator)
    }
    VectorTraining.train(options, plan.dim, Array.concat(sample: _*), plan.rows)
  }

  /** Builds and commits the index in this process, one segment a group of fragments (at most `segments`). */
  def run(dataset: Dataset, read: Snapshot, field: LanceField, options: VectorIndexOptions, name: String, existing: Seq[IndexMetadata],
      segments: Int, allocator: BufferAllocator): CommitResult = {
    val old = replaced(existing, name, field, s"${options.indexType.name} index on ${dataset.path}")
    val model = train(dataset.storage, read, field, options, allocator)
    val added = groups(read.fragments, segments).map(g =>
      VectorIndexSegment.build(dataset.storage, read.files, g, field, model, name, read.version, allocator))
    ZoneMapSegment.commit(dataset, read, added, old, CommitRetries(), CommitRecord(Statement.CreateIndex))
  }
}
