package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types._
import sparklance.format.SchemaChangeException
import sparklance.format.commit.{CommitRecord, Committer, Operation, Statement}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{ColumnFiles, LanceSchema, UncommittedFiles}
import sparklance.spark.{CheckConstraints, IdentityColumns, IdentityViolationException, LanceCatalog, LanceTable, SparkTypes}
import sparklance.spark.evolution.ColumnWriteJob

/**
 * `CALL lance.system.update_columns(table => 'db.t', expressions => map('c', 'id * 3'))` or
 * `(..., source => 'db.fixes', on => 'id')`: a backfill of existing columns for every row, as
 * pylance's `update_columns` commits it (an Update rewriting columns in place): per fragment one
 * file holds the new values of those columns for all its rows, the old files keep the rest (the
 * rewritten fields listed as -2), rows keep their addresses and ids, and every row's
 * `_row_last_updated_at_version` becomes the commit's. With a source, rows without a match get NULL.
 */
final class UpdateColumnsProcedure(catalog: LanceCatalog) extends ColumnValuesProcedure(catalog) {
  override def name(): String = UpdateColumnsProcedure.Name
  override def description(): String = "Rewrites columns of every row, writing only those columns"

  override protected def run(args: InternalRow): InternalRow = {
    val target = table(args, 0)
    val snapshot = target.dataset.snapshot(forWrite = true)
    val supplied = values(args, target.quotedName, snapshot)
    val names = supplied.columns.drop(2).toSeq
    val fields = names.map(n => snapshot.schema.field(n).getOrElse(throw new SchemaChangeException(target.quotedName, n,
      "there is no such column to update (add new columns with add_columns)")))
    // Its values are not checked against CHECK constraints: one naming an updated column refuses it.
    val checked = names.flatMap(n => CheckConstraints.naming(CheckConstraints.all(target.quotedName, snapshot), Seq(n))).distinct
    if (checked.nonEmpty) throw new SchemaChangeException(target.quotedName, names.mkString(", "), s"CHECK constraint(s) " +
      s"${checked.map(c => s"${c.name()} (${c.predicateSql()})").mkString(", ")} name it, and update_columns does not check " +
      "them; use UPDATE, which does")
    // A GENERATED ALWAYS identity column's values never change, as UPDATE refuses to change them.
    IdentityColumns.of(snapshot.schema).find(c => c.always && names.contains(c.name)).foreach { c =>
      throw new IdentityViolationException(target.quotedName, c.name,
        "the column is GENERATED ALWAYS AS IDENTITY, and update_columns would rewrite it; its values cannot change")
    }
    // Values are cast to the column's type, as UPDATE ... SET assigns them.
    val typed = supplied.select(col(LanceTable.FragmentId) +: col(LanceTable.RowAddress) +: fields.map(f =>
      col(s"`${f.name}`").cast(SparkTypes.toSparkField(f, target.quotedName).dataType).as(f.name)): _*)
    val files = ColumnWriteJob.fromRows(spark, target.quotedName, target.dataset, snapshot, typed, LanceSchema(fields),
      catalog.settingsForTasks)
    val updated = snapshot.fragments.flatMap(f => files.get(f.getId).map(ColumnFiles.replaced(f, _)))
    val written = files.values.map(f => DataFragment.newBuilder().addFiles(f).build()).toSeq
    val committed = new UncommittedFiles(target.dataset.storage, target.dataset.path).commit(written)(
      new Committer(target.dataset, catalog.settingsForTasks.commitRetries).commit(Some(snapshot),
        Operation.Update.columns(updated, fields.flatMap(_.preOrder.map(_.id))), record = Some(CommitRecord(Statement.UpdateColumnsProcedure))))
    result(committed.version, names, files)
  }
}

object UpdateColumnsProcedure {
  val Name = "update_columns"
}
