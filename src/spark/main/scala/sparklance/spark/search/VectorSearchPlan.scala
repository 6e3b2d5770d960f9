package sparklance.spark.search

import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.{ArrayType, FloatType, DoubleType}
import sparklance.spark.{LanceTable, SparkTypes}

/**
 * How `vector_search` finds its rows: the exact distance of every row that passes the filter,
 * then the k smallest. Spark plans ORDER BY ... LIMIT k as a top-k (each task keeps its k
 * nearest, the driver merges them), never a sort of every row.
 */
final case class VectorSearchPlan(spark: SparkSession, args: VectorSearchArguments) {
  import VectorSearchPlan._

  private def table: DataFrame = args.version match {
    case None => spark.table(args.table)
    case Some(v) if v.forall(_.isDigit) => spark.sql(s"SELECT * FROM ${args.table} VERSION AS OF $v")
    case Some(tag) => spark.sql(s"SELECT * FROM ${args.table} VERSION AS OF '${tag.replace("'", "\\'")}'")
  }

  def dataFrame: DataFrame = {
    val rows = table
    val field = rows.schema.find(_.name.equalsIgnoreCase(args.column)).getOrElse(throw new IllegalArgumentException(
      s"vector_search: ${args.table} has no column '${args.column}'; its columns are ${rows.columns.mkString(", ")}"))
    field.dataType match {
      case ArrayType(FloatType | DoubleType, _) =>
      case other => throw new IllegalArgumentException(
        s"vector_search: column '${field.name}' of ${args.table} is ${other.sql}, not a vector (an array of floats)")
    }
    if (field.metadata.contains(SparkTypes.VectorDimension) && field.metadata.getLong(SparkTypes.VectorDimension) != args.query.length)
      throw new IllegalArgumentException(s"vector_search: column '${field.name}' of ${args.table} holds vectors of " +
        s"${field.metadata.getLong(SparkTypes.VectorDimension)} items; the query vector has ${args.query.length}")
    val filtered = args.filter.fold(rows)(f => rows.where(f))
    val distance: Column = args.metric.of(col(field.name), args.query)
    val columns = rows.columns.map(c => col(s"`$c`")) :+ distance.as(DistanceColumn)
    filtered.select(columns.toIndexedSeq :+ col(LanceTable.RowId).as(TieBreak): _*)
      .where(col(DistanceColumn).isNotNull)
      .orderBy(col(DistanceColumn), col(TieBreak))
      .limit(args.k)
      .drop(TieBreak)
  }

  def logicalPlan = dataFrame.queryExecution.analyzed
}

object VectorSearchPlan {
  /** The distance column of the answer, as pylance and lance-spark name it. */
  val DistanceColumn = "_distance"
  private val TieBreak = "__vector_search_rowid"
}
