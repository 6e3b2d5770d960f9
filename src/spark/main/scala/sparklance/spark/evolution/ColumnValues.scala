package sparklance.spark.evolution

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.functions.{col, expr}
import sparklance.format.table.Snapshot
import sparklance.spark.LanceTable

/**
 * The values of columns to write for every live row of a table version, as a DataFrame whose
 * first two columns are `_fragid` and `_rowaddr` (see [[ColumnWriteJob.fromRows]]): from Spark
 * SQL expressions over the table's columns, or from a source joined on a key column.
 */
object ColumnValues {
  def fromExpressions(spark: SparkSession, table: String, snapshot: Snapshot, expressions: Seq[(String, String)]): DataFrame = {
    if (expressions.isEmpty) throw new IllegalArgumentException(s"$table: no column expressions given")
    rows(spark, table, snapshot).select(col(LanceTable.FragmentId) +: col(LanceTable.RowAddress) +:
      expressions.map { case (n, e) => expr(e).as(n) }: _*)
  }

  /** `source`'s columns other than `key`, for the row of the table with the same key (NULL without one; two is an error). */
  def fromSource(spark: SparkSession, table: String, snapshot: Snapshot, source: String, key: String): DataFrame = {
    val left = rows(spark, table, snapshot)
    val right = spark.table(source)
    if (!right.columns.contains(key) || !left.columns.contains(key))
      throw new IllegalArgumentException(s"$table: the key column '$key' must be in the table and in $source")
    val added = right.columns.filterNot(_ == key)
    val joined = left.join(right.withColumnRenamed(key, "__sparklance_key"), col(s"`$key`") === col("__sparklance_key"), "left")
    val out = joined.select(col(LanceTable.FragmentId) +: col(LanceTable.RowAddress) +: added.map(c => right(s"`$c`").as(c)).toSeq: _*)
    if (out.groupBy(LanceTable.RowAddress).count().where("count > 1").limit(1).collect().nonEmpty)
      throw new IllegalArgumentException(s"$table: $source has several rows for the key of one row of the table")
    out
  }

  private def rows(spark: SparkSession, table: String, snapshot: Snapshot): DataFrame =
    spark.read.option("versionAsOf", snapshot.version.toString).table(table)
      .select(col(LanceTable.FragmentId) +: col(LanceTable.RowAddress) +: snapshot.schema.fields.map(f => col(s"`${f.name}`")): _*)
}
