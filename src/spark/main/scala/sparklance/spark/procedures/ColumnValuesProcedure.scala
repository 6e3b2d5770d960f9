package sparklance.spark.procedures

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.proto.TableProtos.DataFile
import sparklance.format.table.Snapshot
import sparklance.spark.LanceCatalog
import sparklance.spark.evolution.ColumnValues

/**
 * A procedure that writes column values for every row of a table as column-only files (see
 * [[AddColumnsProcedure]], [[UpdateColumnsProcedure]]): its arguments are the table, then either
 * `expressions` (a map of column name -> Spark SQL expression) or `source` and `on` (a table or
 * view joined on a key column); its result names the commit, the columns and what was written.
 */
abstract class ColumnValuesProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def parameters(): Array[ProcedureParameter] = Array(param("table", StringType, required = true),
    param("expressions", MapType(StringType, StringType)), param("source", StringType), param("on", StringType))

  override def resultSchema: StructType = StructType(Seq(
    StructField("version", LongType, nullable = false),
    StructField("columns", ArrayType(StringType, containsNull = false), nullable = false),
    StructField("files_written", LongType, nullable = false),
    StructField("bytes_written", LongType, nullable = false)))

  /** The values the arguments give for the live rows of `snapshot`: `_fragid`, `_rowaddr`, then the columns. */
  protected def values(args: InternalRow, table: String, snapshot: Snapshot): DataFrame =
    (optional(args, 1)(args.getMap), optional(args, 2)(args.getUTF8String(_).toString), optional(args, 3)(args.getUTF8String(_).toString)) match {
      case (Some(map), None, None) =>
        val named = (0 until map.numElements()).map(i => map.keyArray().getUTF8String(i).toString -> map.valueArray().getUTF8String(i).toString)
        ColumnValues.fromExpressions(spark, table, snapshot, named)
      case (None, Some(from), Some(key)) => ColumnValues.fromSource(spark, table, snapshot, from, key)
      case _ => throw new IllegalArgumentException(s"Procedure ${name()} of $table: give expressions, or source and on")
    }

  protected def result(version: Long, columns: Seq[String], files: Map[Long, DataFile]): InternalRow =
    InternalRow(version, new GenericArrayData(columns.map(UTF8String.fromString).toArray), files.size.toLong,
      files.values.map(_.getFileSizeBytes).sum)
}
