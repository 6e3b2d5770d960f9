package sparklance.spark.procedures

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import sparklance.format.commit.{CommitRecord, Committer, Statement}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{SchemaChange, SchemaEvolution, UncommittedFiles}
import sparklance.spark.{LanceCatalog, SparkTypes}
import sparklance.spark.evolution.ColumnWriteJob

/**
 * `CALL lance.system.add_columns(table => 'db.t', expressions => map('c', 'a * 2'))` or
 * `(..., source => 'db.extra', on => 'id')`: new columns with values, as pylance's `add_columns`
 * and `merge`, in one commit (a Merge). Only the new columns are written: per fragment one file
 * holding them for every row, so existing data is never rewritten. Expressions are Spark SQL over
 * the table's columns; a source is joined on a key column both have (its other columns become
 * the new ones; rows without a match get NULL; a key matched twice is an error).
 */
final class AddColumnsProcedure(catalog: LanceCatalog) extends ColumnValuesProcedure(catalog) {
  override def name(): String = AddColumnsProcedure.Name
  override def description(): String = "Adds columns with values, writing only the new columns"

  override protected def run(args: InternalRow): InternalRow = {
    val target = table(args, 0)
    val snapshot = target.dataset.snapshot(forWrite = true)
    val supplied = values(args, target.quotedName, snapshot)
    val newFields = supplied.schema.fields.drop(2).map(_.copy(nullable = true))
    val evolved = SchemaEvolution.plan(target.quotedName, snapshot,
      newFields.map(f => SchemaChange.AddField(Seq(f.name), SparkTypes.toArrow(f, target.quotedName))).toSeq)
    val fields = evolved.schema.copy(fields = evolved.schema.fields.filter(f => newFields.exists(_.name == f.name)))
    val files = ColumnWriteJob.fromRows(spark, target.quotedName, target.dataset, snapshot, supplied, fields, catalog.settingsForTasks)
    val written = files.values.map(f => DataFragment.newBuilder().addFiles(f).build()).toSeq
    val committed = new UncommittedFiles(target.dataset.storage, target.dataset.path).commit(written)(
      new Committer(target.dataset, catalog.settingsForTasks.commitRetries).commit(Some(snapshot), evolved.withFiles(files),
        record = Some(CommitRecord(Statement.AddColumnsProcedure))))
    result(committed.version, fields.fields.map(_.name), files)
  }

}

object AddColumnsProcedure {
  val Name = "add_columns"
}
