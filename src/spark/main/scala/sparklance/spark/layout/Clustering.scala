package sparklance.spark.layout

import org.apache.spark.sql.connector.expressions.{ClusterByTransform, NamedReference, Transform}
import org.apache.spark.sql.types.StructType

/**
 * A table's clustering columns (`CREATE TABLE ... CLUSTER BY (a, b)`, `ALTER TABLE ... CLUSTER BY`):
 * kept in the table config as `sparklance.clustering_columns` (names separated by commas), which
 * Lance keeps through every commit, pylance's too. Appends sort each task's rows by them and
 * compaction lays rows out by them (see [[RowLayout.clustered]]). The table reports no
 * partitioning: Spark would print a ClusterByTransform as PARTITIONED BY (cluster_by(...)) in SHOW
 * CREATE TABLE, which does not replay; the property it prints does.
 */
object Clustering {
  val Property = "clustering_columns"
  val ConfigKey = s"sparklance.$Property"

  /** The stored form of a list of names: trimmed, separated by commas; '' for none. */
  def normalize(value: String): String = {
    val names = value.split(',').map(_.trim).toSeq
    if (value.trim.isEmpty) ""
    else if (names.exists(_.isEmpty)) throw new IllegalArgumentException(s"$Property must list column names separated by commas, got '$value'")
    else names.mkString(",")
  }

  def columns(config: Map[String, String]): Seq[String] = config.get(ConfigKey).toSeq.flatMap(RowLayout.names)

  /** The layout writes and compaction keep, if the table is clustered. */
  def layout(config: Map[String, String]): Option[RowLayout] = Some(columns(config)).filter(_.nonEmpty).map(RowLayout.clustered)

  /** Refuses (IllegalArgumentException) clustering columns the table lacks or cannot order rows by. */
  def check(table: String, schema: StructType, config: Map[String, String]): Unit = {
    val listed = columns(config)
    if (listed.nonEmpty) LayoutRewrite.unusable(table, schema, listed).foreach(why =>
      throw new IllegalArgumentException(s"$Property of $table: $why"))
  }

  /**
   * The clustering columns a CREATE's partitioning names (its CLUSTER BY); any other transform
   * (PARTITIONED BY) is refused: Lance tables have no partitions.
   */
  def fromPartitioning(table: String, partitions: Seq[Transform]): Option[Seq[String]] = {
    partitions.find(!_.isInstanceOf[ClusterByTransform]).foreach(_ =>
      throw new UnsupportedOperationException(s"Lance tables are not partitioned; remove PARTITIONED BY from $table " +
        s"(CLUSTER BY (columns) orders rows so that filters skip, see docs/clustering.md)"))
    partitions.collectFirst { case c: ClusterByTransform => c.columnNames.map(names).toSeq }
  }

  def names(reference: NamedReference): String = {
    val parts = reference.fieldNames()
    if (parts.length != 1) throw new UnsupportedOperationException(s"CLUSTER BY takes top-level columns, not ${parts.mkString(".")}")
    parts(0)
  }

}
