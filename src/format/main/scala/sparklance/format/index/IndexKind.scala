package sparklance.format.index

import java.util.Locale

/**
 * What an index stores, as far as rewriting fragments is concerned. Lance names an index's type
 * by the type URL of its details message; the kind decides what a compaction may do with the
 * fragments an index covers (LANCE-MAINTENANCE.md §1.6, §4.4).
 */
sealed trait IndexKind

object IndexKind {
  /**
   * Keyed by row id (BITMAP, INVERTED, vector indices). On a table with stable row ids rows keep
   * their ids through compaction, so coverage moves to the new fragments unchanged; on other
   * tables the ids are addresses and the index would need remapping.
   */
  case object RowIds extends IndexKind

  /** Stores row addresses even on stable-row-id tables (BTREE): compaction would need a remap. */
  case object RowAddresses extends IndexKind

  /**
   * Summaries per fragment that cannot be remapped (ZONEMAP, BLOOMFILTER): a rewritten fragment
   * simply stops being covered, and its rows are scanned.
   */
  case object FragmentSummaries extends IndexKind

  /**
   * Lance's fragment reuse index: maps rows of an earlier deferred compaction to their new places
   * for indices not yet remapped. Rewriting the fragments it names again would strand those rows.
   */
  case object FragmentReuse extends IndexKind

  /** Lance's MemWAL state: carried along, covers no data. */
  case object System extends IndexKind

  /** A type this library does not know: the fragments it covers are never rewritten. */
  final case class Unknown(typeUrl: String) extends IndexKind

  def of(typeUrl: String): IndexKind = typeUrl.toLowerCase(Locale.ROOT).split('/').last match {
    case "lance.table.bitmapindexdetails" | "lance.table.invertedindexdetails" | "lance.index.pb.vectorindexdetails" => RowIds
    case "lance.table.btreeindexdetails" => RowAddresses
    case "lance.table.zonemapindexdetails" | "lance.index.pb.bloomfilterindexdetails" => FragmentSummaries
    case "lance.table.fragmentreuseindexdetails" => FragmentReuse
    case "lance.table.memwalindexdetails" => System
    case _ => Unknown(typeUrl)
  }
}
