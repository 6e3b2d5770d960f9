package sparklance.spark.procedures

import java.util.Locale
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.commit.{CommitRecord, Statement}
import sparklance.format.index.Indices
import sparklance.format.index.vector.{VectorIndexType, VectorMetric}
import sparklance.format.index.vector.build.{VectorIndexBuild, VectorIndexOptions}
import sparklance.format.skipping.{ZoneMapSegment, ZoneValues}
import sparklance.format.table.{LanceField, Snapshot}
import sparklance.spark.errors.{LanceErrorCondition, LanceErrors}
import sparklance.spark.{Allocators, LanceCatalog}
import sparklance.spark.indexing.{VectorIndexJob, ZoneMapJob}

/**
 * `CALL lance.system.create_index(table => 'db.t', column => 'c', type => 'zonemap', name => 'c_idx',
 * rows_per_zone => 8192)`: builds a ZONEMAP index over every live row of the table's top-level
 * column `c`, one Spark task a fragment, and commits it as a Lance CreateIndex that pylance reads
 * and uses as its own. An index of the same name is replaced. Scans then skip the zones a filter
 * on `c` rules out; fragments written later are read whole until the index is built again.
 *
 * `index_type => 'IVF_FLAT' | 'IVF_PQ' | 'IVF_SQ'` (or `type`) on a vector column builds a vector
 * index in pylance's format, with pylance's option names: `metric` (l2, cosine, dot),
 * `num_partitions`, `num_sub_vectors` (required for IVF_PQ), `num_bits` (8), `sample_rate`,
 * `max_iters`, `target_partition_size` (see [[VectorIndexJob]]).
 */
final class CreateIndexProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = CreateIndexProcedure.Name
  override def description(): String = "Builds a zone map or an IVF vector index on a column of a table"

  override def parameters(): Array[ProcedureParameter] =
    Array(param("table", StringType, required = true), param("column", StringType, required = true),
      param("type", StringType), param("name", StringType), param("rows_per_zone", LongType),
      param("index_type", StringType), param("metric", StringType), param("num_partitions", LongType),
      param("num_sub_vectors", LongType), param("num_bits", LongType), param("sample_rate", LongType),
      param("max_iters", LongType), param("target_partition_size", LongType))

  override def resultSchema: StructType = StructType(Seq(
    StructField("name", StringType, nullable = false), StructField("fragments", LongType, nullable = false),
    StructField("zones", LongType, nullable = false), StructField("version", LongType, nullable = false)))

  override protected def run(args: InternalRow): InternalRow = {
    val target = table(args, 0)
    val column = args.getUTF8String(1).toString
    val named = Seq(optional(args, 2)(args.getUTF8String), optional(args, 5)(args.getUTF8String)).flatten.map(_.toString)
    if (named.map(_.toLowerCase(Locale.ROOT)).distinct.size > 1) throw new IllegalArgumentException(
      s"Procedure create_index of ${target.quotedName}: type and index_type disagree (${named.mkString(" and ")}); give one")
    val kind = named.headOption.map(_.toLowerCase(Locale.ROOT)).getOrElse("zonemap")
    val vector = VectorIndexType.find(kind)
    val vectorOptions = (6 to 12).filterNot(args.isNullAt).map(i => parameters()(i).name())
    if (vector.isEmpty && vectorOptions.nonEmpty) throw new IllegalArgumentException(
      s"Procedure create_index of ${target.quotedName}: ${vectorOptions.mkString(", ")} apply to vector indices " +
        s"(index_type IVF_FLAT, IVF_PQ or IVF_SQ), not to '$kind'")
    if (kind != "zonemap" && vector.isEmpty) throw new IllegalArgumentException(
      s"Procedure create_index of ${target.quotedName}: sparklance builds 'zonemap', 'IVF_FLAT', 'IVF_PQ' and 'IVF_SQ' indices, " +
        s"not '$kind' (it reads pylance's other scalar indices' coverage but does not build them)")
    val read = target.dataset.snapshot(forWrite = true)
    val field = read.schema.field(column).getOrElse(throw LanceErrors(LanceErrorCondition.ColumnNotFound, Map("message" ->
      s"Procedure create_index of ${target.quotedName}: no top-level column '$column' (columns: ${read.schema.fields.map(_.name).mkString(", ")})",
      "table" -> target.quotedName, "column" -> column)))
    vector match {
      case Some(indexType) => buildVector(target, read, field, indexType, args)
      case None => buildZoneMap(target, read, field, column, args)
    }
  }

  private def buildVector(target: LanceProcedure.Target, read: Snapshot, field: LanceField, indexType: VectorIndexType,
      args: InternalRow): InternalRow = {
    def int(position: Int): Option[Int] = optional(args, position)(args.getLong).map { v =>
      if (v < Int.MinValue || v > Int.MaxValue) throw new IllegalArgumentException(
        s"Procedure create_index: ${parameters()(position).name()} = $v is out of range")
      v.toInt
    }
    val metricName = optional(args, 6)(args.getUTF8String).map(_.toString)
    val metric = metricName.fold[VectorMetric](VectorMetric.L2)(m => VectorMetric.find(m).getOrElse(throw new IllegalArgumentException(
      s"Procedure create_index of ${target.quotedName}: unknown metric '$m' for ${indexType.name}; use l2, cosine or dot")))
    val defaults = VectorIndexOptions(indexType)
    val options = VectorIndexOptions(indexType, metric, numPartitions = int(7), numSubVectors = int(8),
      numBits = int(9).getOrElse(defaults.numBits), sampleRate = int(10).getOrElse(defaults.sampleRate),
      maxIterations = int(11).getOrElse(defaults.maxIterations), targetPartitionSize = optional(args, 12)(args.getLong))
    if (!args.isNullAt(4)) throw new IllegalArgumentException(
      s"Procedure create_index of ${target.quotedName}: rows_per_zone applies to zone maps, not to ${indexType.name}")
    val indexName = optional(args, 3)(args.getUTF8String).map(_.toString).getOrElse(s"${field.name}_idx")
    val where = s"Procedure create_index of ${target.quotedName}"
    val existing = Indices.parse(read.file.indexSection, s"${target.quotedName} version ${read.version}")
    val replaced = VectorIndexBuild.replaced(existing, indexName, field, where)
    val settings = catalog.settingsForTasks
    val built = try VectorIndexJob.build(spark, target.quotedName, read, settings.storageConf, field, options, indexName)
      catch { case e: IllegalArgumentException => throw new IllegalArgumentException(s"$where: ${e.getMessage}", e) }
    val committed = ZoneMapSegment.commit(target.dataset, read, built.segments, replaced, settings.commitRetries,
      CommitRecord(Statement.CreateIndex))
    InternalRow(UTF8String.fromString(indexName), read.fragments.size.toLong, built.segments.size.toLong, committed.version)
  }

  private def buildZoneMap(target: LanceProcedure.Target, read: Snapshot, field: LanceField, column: String,
      args: InternalRow): InternalRow = {
    if (!ZoneValues.supports(field)) throw new UnsupportedOperationException(
      s"Procedure create_index of ${target.quotedName}: column '$column' of type ${field.arrowType} cannot have a zone map; " +
        "integers, dates, timestamps (microseconds), floating point, strings, binary, booleans and decimals can")
    val indexName = optional(args, 3)(args.getUTF8String).map(_.toString).getOrElse(s"${column}_idx")
    val rowsPerZone = optional(args, 4)(args.getLong).getOrElse(ZoneMapSegment.DefaultRowsPerZone)
    if (rowsPerZone <= 0) throw new IllegalArgumentException(s"Procedure create_index: rows_per_zone must be positive, got $rowsPerZone")
    val existing = Indices.parse(read.file.indexSection, s"${target.quotedName} version ${read.version}").filter(_.getName == indexName)
    existing.find(i => !ZoneMapSegment.isZoneMap(i) || i.getFieldsList.asScala.map(_.intValue) != Seq(field.id)).foreach { other =>
      throw new IllegalArgumentException(s"Procedure create_index of ${target.quotedName}: index ${Indices.describe(other)} " +
        s"already exists and is not a zone map of '$column'; drop it first (drop_index) or choose another name")
    }

    val settings = catalog.settingsForTasks
    val zones = ZoneMapJob.zones(spark, target.quotedName, read.files, settings.storageConf, read.fragments, field, rowsPerZone)
    val entry = Using.resource(Allocators.child(s"zone map $indexName of ${target.quotedName}")) { allocator =>
      ZoneMapSegment.create(target.dataset.storage, target.dataset.path, indexName, field.id, field.arrowType, zones,
        read.fragments.map(_.getId), read.version, rowsPerZone, allocator)
    }
    val committed = ZoneMapSegment.commit(target.dataset, read, Seq(entry), existing, settings.commitRetries,
      CommitRecord(Statement.CreateIndex))
    InternalRow(UTF8String.fromString(indexName), read.fragments.size.toLong, zones.size.toLong, committed.version)
  }
}

object CreateIndexProcedure {
  val Name = "create_index"
}
