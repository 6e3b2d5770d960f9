package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.write.{DeltaWriter, DeltaWriterFactory}
import org.apache.spark.sql.types.StructType
import sparklance.spark.LanceTable
import sparklance.spark.write.{IdentityPlan, WriteTarget}

/**
 * `lineage` holds, on a table with stable row ids, where `_rowid` and `_row_created_at_version`
 * sit in the metadata row Spark hands to `update`; `inPlace` how updated rows may stay where they are.
 */
final class LanceDeltaWriterFactory(target: WriteTarget, rowSchema: StructType, lineage: Option[(Int, Int)],
    inPlace: Option[InPlaceUpdates], identity: IdentityPlan = IdentityPlan.None) extends DeltaWriterFactory {
  override def createWriter(partitionId: Int, taskId: Long): DeltaWriter[InternalRow] =
    new LanceDeltaWriter(target, rowSchema, lineage, s"delta-$partitionId-$taskId", inPlace,
      if (identity.isEmpty) None else Some(identity.forTask(rowSchema, partitionId)))
}

object LanceDeltaWriterFactory {
  def lineagePositions(metadataSchema: StructType): Option[(Int, Int)] = {
    val names = metadataSchema.fieldNames.toSeq
    (names.indexOf(LanceTable.RowId), names.indexOf(LanceTable.CreatedAtVersion)) match {
      case (id, created) if id >= 0 && created >= 0 => Some((id, created))
      case _ => None
    }
  }
}
