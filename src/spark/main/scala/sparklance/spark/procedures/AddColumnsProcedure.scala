package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.{GenericArrayData, MapData}
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.functions.{col, expr}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.commit.Committer
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{SchemaChange, SchemaEvolution, UncommittedFiles}
import sparklance.spark.{LanceCatalog, LanceTable, SparkTypes}
import sparklance.spark.evolution.ColumnWriteJob

/**
 * `CALL lance.system.add_columns(table => 'db.t', expressions => map('c', 'a * 2'))` or
 * `(..., source => 'db.extra', on => 'id')`: new columns with values, as pylance's `add_columns`
 * and `merge`, in one commit (a Merge). Only the new columns are written: per fragment one file
 * holding them for every row, so existing data is never rewritten. Expressions are Spark SQL over
 * the table's columns; a source is joined on a key column both have (its other columns become
 * the new ones; rows without a match get NULL; a key matched twice is an error).
 */
final class AddColumnsProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = AddColumnsProcedure.Name
  override def description(): String = "Adds columns with values, writing only the new columns"

  override def parameters(): Array[ProcedureParameter] = Array(param("table", StringType, required = true),
    param("expressions", MapType(StringType, StringType)), param("source", StringType), param("on", StringType))

  override def resultSchema: StructType = StructType(Seq(
    StructField("version", LongType, nullable = false),
    StructField("columns", ArrayType(StringType, containsNull = false), nullable = false),
    StructField("files_written", LongType, nullable = false),
    StructField("bytes_written", LongType, nullable = false)))

  override protected def run(args: InternalRow): InternalRow = {
    val target = table(args, 0)
    val snapshot = target.dataset.snapshot(forWrite = true)
    val rows = spark.read.option("versionAsOf", snapshot.version.toString).table(target.quotedName)
      .select(col(LanceTable.FragmentId) +: col(LanceTable.RowAddress) +: snapshot.schema.fields.map(f => col(s"`${f.name}`")): _*)
    val values = (optional(args, 1)(args.getMap), optional(args, 2)(args.getUTF8String(_).toString),
        optional(args, 3)(args.getUTF8String(_).toString)) match {
      case (Some(map), None, None) =>
        val named = pairs(map)
        if (named.isEmpty) throw new IllegalArgumentException(s"Procedure add_columns of ${target.quotedName}: expressions is empty")
        rows.select(col(LanceTable.FragmentId) +: col(LanceTable.RowAddress) +: named.map { case (n, e) => expr(e).as(n) }: _*)
      case (None, Some(source), Some(key)) =>
        val right = spark.table(source)
        if (!right.columns.contains(key) || !rows.columns.contains(key)) throw new IllegalArgumentException(
          s"Procedure add_columns of ${target.quotedName}: the key column '$key' must be in the table and in $source")
        val added = right.columns.filterNot(_ == key)
        val joined = rows.join(right.withColumnRenamed(key, "__sparklance_key"), col(s"`$key`") === col("__sparklance_key"), "left")
        val out = joined.select(col(LanceTable.FragmentId) +: col(LanceTable.RowAddress) +: added.map(c => right(s"`$c`").as(c)).toSeq: _*)
        val twice = out.groupBy(LanceTable.RowAddress).count().where("count > 1").limit(1).collect()
        if (twice.nonEmpty) throw new IllegalArgumentException(
          s"Procedure add_columns of ${target.quotedName}: $source has several rows for the key of one row of the table")
        out
      case _ => throw new IllegalArgumentException(
        s"Procedure add_columns of ${target.quotedName}: give expressions, or source and on")
    }
    val newFields = values.schema.fields.drop(2).map(_.copy(nullable = true))
    val evolved = SchemaEvolution.plan(target.quotedName, snapshot,
      newFields.map(f => SchemaChange.AddField(Seq(f.name), SparkTypes.toArrow(f, target.quotedName))).toSeq)
    val fields = evolved.schema.copy(fields = evolved.schema.fields.filter(f => newFields.exists(_.name == f.name)))
    val files = ColumnWriteJob.fromRows(spark, target.quotedName, target.dataset, snapshot, values, fields, catalog.settingsForTasks)
    val written = files.values.map(f => DataFragment.newBuilder().addFiles(f).build()).toSeq
    val committed = new UncommittedFiles(target.dataset.storage, target.dataset.path).commit(written)(
      new Committer(target.dataset, catalog.settingsForTasks.commitRetries).commit(Some(snapshot), evolved.withFiles(files)))
    InternalRow(committed.version, new GenericArrayData(fields.fields.map(f => UTF8String.fromString(f.name)).toArray),
      files.size.toLong, files.values.map(_.getFileSizeBytes).sum)
  }

  private def pairs(map: MapData): Seq[(String, String)] =
    (0 until map.numElements()).map(i => map.keyArray().getUTF8String(i).toString -> map.valueArray().getUTF8String(i).toString)
}

object AddColumnsProcedure {
  val Name = "add_columns"
}
