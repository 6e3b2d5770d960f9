package sparklance.spark.procedures

import java.util.Locale
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.index.Indices
import sparklance.format.skipping.{ZoneMapSegment, ZoneValues}
import sparklance.spark.errors.{LanceErrorCondition, LanceErrors}
import sparklance.spark.{Allocators, LanceCatalog}
import sparklance.spark.indexing.ZoneMapJob

/**
 * `CALL lance.system.create_index(table => 'db.t', column => 'c', type => 'zonemap', name => 'c_idx',
 * rows_per_zone => 8192)`: builds a ZONEMAP index over every live row of the table's top-level
 * column `c`, one Spark task a fragment, and commits it as a Lance CreateIndex that pylance reads
 * and uses as its own. An index of the same name is replaced. Scans then skip the zones a filter
 * on `c` rules out; fragments written later are read whole until the index is built again.
 */
final class CreateIndexProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = CreateIndexProcedure.Name
  override def description(): String = "Builds a zone map index on a column of a table"

  override def parameters(): Array[ProcedureParameter] =
    Array(param("table", StringType, required = true), param("column", StringType, required = true),
      param("type", StringType), param("name", StringType), param("rows_per_zone", LongType))

  override def resultSchema: StructType = StructType(Seq(
    StructField("name", StringType, nullable = false), StructField("fragments", LongType, nullable = false),
    StructField("zones", LongType, nullable = false), StructField("version", LongType, nullable = false)))

  override protected def run(args: InternalRow): InternalRow = {
    val target = table(args, 0)
    val column = args.getUTF8String(1).toString
    val kind = optional(args, 2)(args.getUTF8String).map(_.toString.toLowerCase(Locale.ROOT)).getOrElse("zonemap")
    if (kind != "zonemap") throw new UnsupportedOperationException(
      s"Procedure create_index of ${target.quotedName}: sparklance builds 'zonemap' indices, not '$kind' " +
        "(it reads pylance's other scalar indices' coverage but does not build them)")
    val read = target.dataset.snapshot(forWrite = true)
    val field = read.schema.field(column).getOrElse(throw LanceErrors(LanceErrorCondition.ColumnNotFound, Map("message" ->
      s"Procedure create_index of ${target.quotedName}: no top-level column '$column' (columns: ${read.schema.fields.map(_.name).mkString(", ")})",
      "table" -> target.quotedName, "column" -> column)))
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
    val committed = ZoneMapSegment.commit(target.dataset, read, Seq(entry), existing, settings.commitRetries)
    InternalRow(UTF8String.fromString(indexName), read.fragments.size.toLong, zones.size.toLong, committed.version)
  }
}

object CreateIndexProcedure {
  val Name = "create_index"
}
