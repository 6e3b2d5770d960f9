package sparklance.format.commit

import org.roaringbitmap.RoaringBitmap
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.LanceSchema

/** What a transaction does to the table; the driver builds one per statement. */
sealed trait Operation { def name: String }

object Operation {
  /** New fragments (ids assigned at commit). */
  final case class Append(fragments: Seq[DataFragment]) extends Operation { def name = "Append" }

  /**
   * Replaces every fragment and the schema; also what creates a table. `stableRowIds` is set when
   * a table is created or replaced, and then `config` replaces the table's config; None (INSERT
   * OVERWRITE) keeps the table's row id choice and config, upserting `config` into it.
   */
  final case class Overwrite(fragments: Seq[DataFragment], schema: LanceSchema, config: Map[String, String] = Map.empty,
      stableRowIds: Option[Boolean] = None)
    extends Operation { def name = "Overwrite" }

  /**
   * Fragments with new deletion files, and fragments removed because all their rows are deleted.
   *
   * `deletedOffsets` holds, per fragment id, the row offsets this statement newly deletes (not the
   * fragment's earlier deletions). With it the committer can rebase onto a concurrent Delete or
   * Update of the same fragment that deleted other rows; without it (an empty map, or a fragment
   * missing from it) any concurrent change to a fragment we touch is a conflict.
   */
  final case class Delete(updated: Seq[DataFragment], deletedIds: Seq[Long], predicate: String,
      deletedOffsets: Map[Long, RoaringBitmap] = Map.empty)
    extends Operation { def name = "Delete" }

  /**
   * Rows tombstoned in `updated` / `removedIds` and rewritten into `newFragments` (REWRITE_ROWS).
   * On a table with stable row ids a new fragment may start with the ids and created-at versions
   * of the rows it rewrites; its other rows are new (see RowLineage.assign).
   * `deletedOffsets` as for [[Delete]]: the offsets this statement tombstoned, per fragment id.
   */
  final case class Update(removedIds: Seq[Long], updated: Seq[DataFragment], newFragments: Seq[DataFragment],
      deletedOffsets: Map[Long, RoaringBitmap] = Map.empty)
    extends Operation { def name = "Update" }

  /**
   * Raises the table's fragment id high-water mark by `count` without changing its rows, so that
   * a compaction can name its new fragments before committing them (Lance commits one before
   * every Rewrite: index coverage is computed from the ids in the Rewrite).
   */
  final case class ReserveFragments(count: Int) extends Operation { def name = "ReserveFragments" }

  /** Old fragments replaced by new ones holding the same live rows (ids final, lineage carried). */
  final case class RewriteGroup(oldFragments: Seq[DataFragment], newFragments: Seq[DataFragment])

  /** A compaction: each group's old fragments are replaced by its new ones, in place. */
  final case class Rewrite(groups: Seq[RewriteGroup]) extends Operation { def name = "Rewrite" }

  /**
   * Makes an earlier version current again, as pylance's `restore`: its fragments, schema, config
   * and indices, as a new version. Fragment and row ids are never reused, so the high-water marks
   * stay where the latest version has them.
   */
  final case class Restore(target: sparklance.format.table.Snapshot) extends Operation { def name = "Restore" }
}
