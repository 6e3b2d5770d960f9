package sparklance.format.commit

import org.roaringbitmap.RoaringBitmap
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.table.LanceSchema

/** What a transaction does to the table; the driver builds one per statement. */
sealed trait Operation { def name: String }

object Operation {
  /** New fragments (ids assigned at commit). */
  final case class Append(fragments: Seq[DataFragment]) extends Operation { def name = "Append" }

  /**
   * Replaces every fragment and the schema; also what creates a table. `stableRowIds` is set when
   * a table is created or replaced, and then `config` and `metadata` replace the table's config and
   * table metadata; None (INSERT OVERWRITE) keeps the table's row id choice, config and metadata,
   * upserting `config` into it. (Lance's Overwrite transaction has no table metadata: it is set on
   * the manifest only.)
   */
  final case class Overwrite(fragments: Seq[DataFragment], schema: LanceSchema, config: Map[String, String] = Map.empty,
      stableRowIds: Option[Boolean] = None, metadata: Map[String, String] = Map.empty)
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
   *
   * With `inPlace`, some rows were instead updated where they are (Lance's REWRITE_COLUMNS): those
   * fragments of `updated` hold a new file with the rewritten columns for all their rows (see
   * [[sparklance.format.table.ColumnFiles]]).
   */
  final case class Update(removedIds: Seq[Long], updated: Seq[DataFragment], newFragments: Seq[DataFragment],
      deletedOffsets: Map[Long, RoaringBitmap] = Map.empty, inPlace: Option[InPlace] = None)
    extends Operation { def name = "Update" }

  object Update {
    /**
     * Columns rewritten for every row of `updated` (pylance's `update_columns`): each fragment keeps
     * its rows and gains a file holding `fields` for all of them.
     */
    def columns(updated: Seq[DataFragment], fields: Seq[Int]): Update = {
      val all = updated.map { f => val rows = new RoaringBitmap(); rows.add(0L, f.getPhysicalRows); f.getId -> rows }.toMap
      Update(Nil, updated, Nil, inPlace = Some(InPlace(fields, all)))
    }
  }

  /**
   * Rows updated in place: the field ids whose values were written anew as column files, and per
   * fragment id the row offsets whose values changed. Those rows were last updated by the commit;
   * indices on the fields stop covering the fragments.
   */
  final case class InPlace(fields: Seq[Int], rows: Map[Long, RoaringBitmap]) {
    def fragmentIds: Set[Long] = rows.keySet
  }

  /**
   * Raises the table's fragment id high-water mark by `count` without changing its rows, so that
   * a compaction can name its new fragments before committing them (Lance commits one before
   * every Rewrite: index coverage is computed from the ids in the Rewrite).
   */
  final case class ReserveFragments(count: Int) extends Operation { def name = "ReserveFragments" }

  /**
   * Index segments added to the table's index section and segments removed from it (by uuid),
   * rows and schema unchanged: a new index, an index rebuilt (new segments replacing old ones),
   * or an index dropped (removals only).
   */
  final case class CreateIndex(added: Seq[IndexMetadata], removed: Seq[IndexMetadata]) extends Operation {
    def name = "CreateIndex"
  }

  /**
   * Old fragments replaced by new ones holding the same live rows (ids final, lineage carried);
   * `zones` are those of the new fragments' files, gathered while they were written, for the zone
   * maps committed with them (they are not part of the transaction).
   */
  final case class RewriteGroup(oldFragments: Seq[DataFragment], newFragments: Seq[DataFragment],
      zones: sparklance.format.skipping.WrittenZones = sparklance.format.skipping.WrittenZones.Empty)

  /** A compaction: each group's old fragments are replaced by its new ones, in place. */
  final case class Rewrite(groups: Seq[RewriteGroup]) extends Operation { def name = "Rewrite" }

  /**
   * Columns added (or a column's values written anew under a new field id): `fragments` replaces
   * the table's fragment list (every fragment, with the files holding new columns appended), and
   * `schema` is the whole new schema. `preservesNullability` promises that writers staged against
   * the old schema may omit the new fields (they read as NULL): true for nullable added columns,
   * false where concurrent values could be lost (a type change), which makes them retry.
   */
  final case class Merge(fragments: Seq[DataFragment], schema: LanceSchema, preservesNullability: Boolean)
    extends Operation { def name = "Merge" }

  /**
   * `change` (an Append, Delete or Update, its fragments as in `pending.base`) together with the
   * schema change it needs, in one commit: recorded as a Lance Merge of the whole resulting
   * fragment list (new fragments hold the new columns, existing ones gain the staged column
   * files), so pylance sees one schema change with data. Commit it on `pending.base`.
   */
  final case class Evolving(change: Operation, pending: sparklance.format.table.PendingSchema) extends Operation {
    require(change.isInstanceOf[Append] || change.isInstanceOf[Delete] || change.isInstanceOf[Update],
      s"a schema change lands with an Append, Delete or Update, not a ${change.name}")
    def name = "Merge"
  }

  /**
   * A new schema over the same fragments: columns dropped, renamed, nullability, comments or
   * order changed. Data files left without any field of the schema leave their fragments.
   * `preservesNullability` is false when a column becomes NOT NULL, which makes concurrent
   * writers of values retry.
   */
  final case class Project(schema: LanceSchema, preservesNullability: Boolean) extends Operation { def name = "Project" }

  /**
   * Table config (`config`, where Lance reads its own `lance.*` keys) and table metadata (user
   * keys, pylance's `ds.metadata`) set and removed.
   */
  final case class UpdateConfig(config: Map[String, String] = Map.empty, removedConfig: Set[String] = Set.empty,
      metadata: Map[String, String] = Map.empty, removedMetadata: Set[String] = Set.empty)
    extends Operation { def name = "UpdateConfig" }

  /**
   * Makes an earlier version current again, as pylance's `restore`: its fragments, schema, config
   * and indices, as a new version. Fragment and row ids are never reused, so the high-water marks
   * stay where the latest version has them.
   */
  final case class Restore(target: sparklance.format.table.Snapshot) extends Operation { def name = "Restore" }
}
