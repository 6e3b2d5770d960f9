package sparklance.spark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.table.{Branches, Dataset}

/**
 * `SELECT * FROM lance.db.t.branches`: the branches of `db.t` (read as `lance.db.t.branch_<name>`),
 * by name: the branch and version each was made from (NULL: the main line), when, and its newest version.
 */
final class BranchesTable(tableName: String, dataset: Dataset)
  extends MetadataTable(tableName, BranchesTable.Name, BranchesTable.Schema) {
  override def rows(): Array[InternalRow] = {
    val branches = new Branches(dataset)
    branches.list.map { b =>
      val latest = branches.dataset(b.name).versions.lastOption.map(Long.box).orNull
      InternalRow(UTF8String.fromString(b.name), b.parentBranch.map(UTF8String.fromString).orNull, b.parentVersion,
        org.apache.spark.sql.catalyst.util.DateTimeUtils.instantToMicros(b.createdAt), latest, b.manifestSize)
    }.toArray
  }
}

object BranchesTable {
  val Name = "branches"
  val Schema: StructType = StructType(Seq(
    StructField("branch", StringType, nullable = false),
    StructField("parent_branch", StringType),
    StructField("parent_version", LongType, nullable = false),
    StructField("created_at", TimestampType, nullable = false),
    StructField("latest_version", LongType),
    StructField("manifest_size", LongType, nullable = false)))
}
