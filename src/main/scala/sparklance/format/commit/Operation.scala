package sparklance.format.commit

import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.LanceSchema

/** What a transaction does to the table; the driver builds one per statement. */
sealed trait Operation { def name: String }

object Operation {
  /** New fragments (ids assigned at commit). */
  final case class Append(fragments: Seq[DataFragment]) extends Operation { def name = "Append" }

  /** Replaces every fragment and the schema; also what creates a table. */
  final case class Overwrite(fragments: Seq[DataFragment], schema: LanceSchema, config: Map[String, String] = Map.empty)
    extends Operation { def name = "Overwrite" }

  /** Fragments with new deletion files, and fragments removed because all their rows are deleted. */
  final case class Delete(updated: Seq[DataFragment], deletedIds: Seq[Long], predicate: String)
    extends Operation { def name = "Delete" }

  /** Rows tombstoned in `updated` / `removedIds` and rewritten into `newFragments` (REWRITE_ROWS). */
  final case class Update(removedIds: Seq[Long], updated: Seq[DataFragment], newFragments: Seq[DataFragment])
    extends Operation { def name = "Update" }
}
