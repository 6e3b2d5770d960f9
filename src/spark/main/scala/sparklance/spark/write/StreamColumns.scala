package sparklance.spark.write

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Cast, Expression, Literal, UnsafeProjection}
import org.apache.spark.sql.types.{DataType, StructType}
import sparklance.format.LanceException

/**
 * How a streaming query's rows become rows of the table it writes. Spark lines a batch write's
 * query up with the table (by name or position) and casts it before the rows reach a writer, but
 * hands a streaming sink the query's rows as they are: a query whose columns come in another
 * order than the table's (a rate source's `timestamp, value` into a table of `value, timestamp`)
 * would put each value into another column. So the sink matches the columns by name, as Delta's
 * sink does: a table column the query lacks is NULL (refused when the column is NOT NULL), a query
 * column the table lacks is refused, and a value of another type is cast where Spark's up-cast
 * rules allow it (INT into BIGINT), else refused. `projection` is None when the rows already fit.
 */
final case class StreamColumns(projection: Option[Seq[Expression]]) {
  /** A function from the query's rows to the table's, for one task (projections are not thread-safe). */
  def rowsFor(): InternalRow => InternalRow = projection match {
    case None => identity
    case Some(exprs) => UnsafeProjection.create(exprs)
  }
}

object StreamColumns {
  /**
   * Matches `input` (the query's columns) to `table` (the table's Spark schema) by name, with
   * `sameName` deciding equality (Spark's case sensitivity); throws [[StreamSchemaMismatchException]]
   * listing every column that cannot be matched.
   */
  def of(tableName: String, table: StructType, input: StructType, sameName: (String, String) => Boolean,
      timeZone: String): StreamColumns = {
    val extra = input.fields.filterNot(i => table.fields.exists(t => sameName(t.name, i.name))).map(_.name)
    val problems = Seq.newBuilder[String]
    extra.foreach { name =>
      problems += s"the query's column '$name' is not in the table (add it with ALTER TABLE ADD COLUMN, or leave it out of the query)"
    }
    val exprs = table.fields.toSeq.map { column =>
      input.fields.indexWhere(i => sameName(column.name, i.name)) match {
        case -1 =>
          if (!column.nullable) problems += s"NOT NULL column '${column.name}' is not among the query's columns"
          Literal(null, column.dataType)
        case i =>
          val from = input.fields(i)
          val read = BoundReference(i, from.dataType, from.nullable)
          if (sameType(from.dataType, column.dataType)) read
          else if (Cast.canUpCast(from.dataType, column.dataType)) Cast(read, column.dataType, Some(timeZone))
          else {
            problems += s"column '${column.name}' is ${column.dataType.sql} and the query gives ${from.dataType.sql}, " +
              "which does not cast to it without loss (cast it in the query)"
            read
          }
      }
    }
    val found = problems.result()
    if (found.nonEmpty) throw new StreamSchemaMismatchException(tableName, found)
    val identity = exprs.zipWithIndex.forall {
      case (b: BoundReference, i) => b.ordinal == i
      case _ => false
    } && input.size == table.size
    StreamColumns(if (identity) None else Some(exprs))
  }

  private def sameType(a: DataType, b: DataType): Boolean = DataType.equalsIgnoreNullability(a, b)
}

/** A streaming query whose columns do not fit the table it writes; nothing was written. */
class StreamSchemaMismatchException(val table: String, problems: Seq[String])
  extends LanceException(s"The streaming query's rows do not fit $table: ${problems.mkString("; ")}")
