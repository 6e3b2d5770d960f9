package sparklance.spark

import java.util.Locale
import sparklance.format.LanceException

/** A table column that has the name of one of sparklance's metadata columns. */
class ReservedColumnException(message: String) extends LanceException(message)

/**
 * Table columns may not take the names of the metadata columns (`_rowid`, `_rowaddr`, `_fragid`,
 * `_row_created_at_version`, `_row_last_updated_at_version`). Spark resolves a table column
 * before a metadata column of the same name, so such a column would hide the metadata column in
 * every query, while the scan, which tells the two apart by name, would fill it with metadata
 * and `_fragid` / `_rowid` predicates on it would prune fragments and rows. Only top-level
 * columns clash: a nested field is always reached through its parent.
 */
object ReservedColumns {
  /**
   * CREATE TABLE [AS SELECT] and REPLACE TABLE: refuses a column that would hide a metadata
   * column; Spark compares names case-insensitively unless told otherwise, so this does too.
   */
  def checkNew(table: String, columns: Seq[String]): Unit =
    columns.find(c => LanceTable.MetadataNames.contains(c.toLowerCase(Locale.ROOT))).foreach { c =>
      throw new ReservedColumnException(s"Column '$c' of $table has the name of the metadata column " +
        s"${c.toLowerCase(Locale.ROOT)}, which every sparklance table has; a column of that name would hide it. " +
        s"Rename the column (reserved names: ${LanceTable.MetadataNames.toSeq.sorted.mkString(", ")})")
    }

  /**
   * An existing table, which another Lance writer may have given such a column (pylance refuses
   * the lineage names but writes `_fragid`): reading it would return metadata in place of the
   * column's values, so the table is refused with the way out. Only exact names are refused: a
   * column whose name differs in case is read as the column it is.
   */
  def checkExisting(table: String, path: String, columns: Seq[String]): Unit =
    columns.find(LanceTable.MetadataNames.contains).foreach { c =>
      throw new ReservedColumnException(s"Table $table ($path) has a column named '$c', the name of a sparklance " +
        s"metadata column, so sparklance cannot read it without mixing up the two. Rename the column, e.g. with " +
        s"pylance: lance.dataset('$path').alter_columns({'path': '$c', 'name': '<new name>'})")
    }
}
