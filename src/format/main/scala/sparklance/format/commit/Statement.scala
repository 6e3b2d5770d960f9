package sparklance.format.commit

/**
 * The kind of statement that made a version, as the table's history names it beside Lance's
 * operation (one Lance Update is an UPDATE or a MERGE; one Merge an ALTER ADD COLUMNS or a
 * write that evolved the schema). `text` is what is stored in the transaction's properties
 * under [[CommitRecord.StatementKey]] and shown as `operation_parameters.statement`.
 */
sealed abstract class Statement(val text: String) {
  override def toString: String = text
}

object Statement {
  case object CreateTable extends Statement("CREATE TABLE")
  case object Insert extends Statement("INSERT")
  case object InsertOverwrite extends Statement("INSERT OVERWRITE")
  /** CREATE TABLE AS SELECT, `writeTo(t).create()`, and a path write that creates the table. */
  case object Ctas extends Statement("CTAS")
  /** REPLACE TABLE (AS SELECT), `writeTo(t).createOrReplace()`. */
  case object ReplaceTable extends Statement("REPLACE TABLE")
  case object Delete extends Statement("DELETE")
  case object Truncate extends Statement("TRUNCATE")
  case object Update extends Statement("UPDATE")
  case object Merge extends Statement("MERGE")
  case object AlterAddColumns extends Statement("ALTER ADD COLUMNS")
  case object AlterDropColumns extends Statement("ALTER DROP COLUMNS")
  case object AlterRenameColumn extends Statement("ALTER RENAME COLUMN")
  case object AlterColumnType extends Statement("ALTER COLUMN TYPE")
  /** Nullability, comments, column order: a new schema over the same data. */
  case object AlterColumn extends Statement("ALTER COLUMN")
  case object SetTblProperties extends Statement("SET TBLPROPERTIES")
  case object UnsetTblProperties extends Statement("UNSET TBLPROPERTIES")
  case object AddConstraint extends Statement("ADD CONSTRAINT")
  case object DropConstraint extends Statement("DROP CONSTRAINT")
  case object AddColumnsProcedure extends Statement("ADD COLUMNS")
  case object UpdateColumnsProcedure extends Statement("UPDATE COLUMNS")
  case object CreateIndex extends Statement("CREATE INDEX")
  case object DropIndex extends Statement("DROP INDEX")
  /** `optimize_index`: an index extended over new fragments (a delta or a merge of its segments), or retrained. */
  case object OptimizeIndex extends Statement("OPTIMIZE INDEX")
  case object Compact extends Statement("COMPACT")
  /** The zone maps of fragments written without them (or with small segments) folded into one segment. */
  case object FoldZoneMaps extends Statement("FOLD ZONE MAPS")
  case object Restore extends Statement("RESTORE")
  /** One micro-batch of a Structured Streaming query in append mode (`writeStream ... toTable`). */
  case object StreamingAppend extends Statement("STREAMING APPEND")
  /** One micro-batch of a streaming query in complete mode: the batch's rows replace the table. */
  case object StreamingComplete extends Statement("STREAMING COMPLETE")
}
