package sparklance.format.table

import scala.jdk.CollectionConverters._
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}

/**
 * A schema change that lands in the same commit as a write (Spark's automatic schema evolution:
 * `MERGE WITH SCHEMA EVOLUTION`, `writeTo(...).withSchemaEvolution()`), so that a statement that
 * fails changes neither. `schema` is what [[SchemaEvolution]] planned on `base`; a retyped
 * column's values are already written, uncommitted, as one column-only file per fragment of
 * `base` (`columnFiles`, by fragment id).
 *
 * `retypes` is set when a column's type changes: rows another writer adds meanwhile would hold
 * the old type under the old field id and read as NULL, so such a commit must not pass them.
 */
final case class PendingSchema(base: Snapshot, schema: LanceSchema, columnFiles: Map[Long, DataFile],
    retypes: Boolean, preservesNullability: Boolean) {

  /** The fragment with its staged column file, if it has one and lacks it. */
  def withColumnFiles(f: DataFragment): DataFragment = columnFiles.get(f.getId) match {
    case Some(file) if !f.getFilesList.asScala.exists(_.getPath == file.getPath) => f.toBuilder.addFiles(file).build()
    case _ => f
  }

  /**
   * The table as the statement reads and writes it: `base`'s version, fragments and config under
   * the new schema, with the staged column files (added columns read as NULL).
   */
  lazy val view: Snapshot = {
    val manifest = base.manifest.toBuilder.clearFields().addAllFields(schema.toProto.asJava)
      .clearFragments().addAllFragments(base.fragments.map(f => withColumnFiles(f)).map { f =>
        val kept = schema.filesOf(f)
        if (kept.size == f.getFilesCount || kept.isEmpty) f else f.toBuilder.clearFiles().addAllFiles(kept.asJava).build()
      }.asJava).build()
    base.copy(file = base.file.copy(manifest = manifest))
  }

  /** The data files written for this change, to delete if the statement fails. */
  def stagedFragments: Seq[DataFragment] = columnFiles.values.map(f => DataFragment.newBuilder().addFiles(f).build()).toSeq
}
