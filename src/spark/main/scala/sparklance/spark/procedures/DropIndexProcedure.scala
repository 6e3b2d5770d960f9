package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.spark.LanceCatalog
import sparklance.spark.indexing.TableIndexes

/**
 * `CALL lance.system.drop_index(table => 'db.t', name => 'c_idx')`: removes every segment of the
 * index from the table's newest version (a Lance CreateIndex that only removes, as pylance's
 * `drop_index`). Its files stay for older versions until vacuum removes them.
 */
final class DropIndexProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = DropIndexProcedure.Name
  override def description(): String = "Drops an index of a table"

  override def parameters(): Array[ProcedureParameter] =
    Array(param("table", StringType, required = true), param("name", StringType, required = true))

  override def resultSchema: StructType = StructType(Seq(
    StructField("name", StringType, nullable = false), StructField("segments", LongType, nullable = false),
    StructField("version", LongType, nullable = false)))

  override protected def run(args: InternalRow): InternalRow = {
    val target = table(args, 0)
    val indexName = args.getUTF8String(1).toString
    val indexes = new TableIndexes(target.quotedName, target.dataset, catalog.settingsForTasks)
    val dropped = indexes.drop(indexName).getOrElse(throw new IllegalArgumentException(s"Procedure drop_index of ${target.quotedName}: " +
      s"no index named '$indexName' (indices: ${indexes.names(target.dataset.snapshot()).mkString(", ")})"))
    InternalRow(UTF8String.fromString(dropped.name), dropped.segments, dropped.version)
  }
}

object DropIndexProcedure {
  val Name = "drop_index"
}
