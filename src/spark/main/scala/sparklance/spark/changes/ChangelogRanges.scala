package sparklance.spark.changes

import org.apache.spark.sql.connector.catalog.ChangelogRange
import sparklance.format.{InvalidOptionException, VersionRemovedException}
import sparklance.format.table.{Dataset, Snapshot}

/**
 * Which commits a change-data range covers. Commit v is the change from version v-1 to v (the
 * first version's commit inserts every row it holds). The versions a range compares must all be
 * left (cleanup removes old ones) and their schemas must let rows of each be served in the
 * schema of the range's end ([[ChangeSchemas]]); where not, the error names the version from which
 * change data can be read.
 */
object ChangelogRanges {
  def commits(table: String, ds: Dataset, range: ChangelogRange): ChangeRange = {
    val listing = ds.listing()
    val loaded = scala.collection.mutable.Map.empty[Long, Snapshot]
    def snapshot(v: Long): Snapshot = loaded.getOrElseUpdate(v, listing.snapshot(v))
    val versions = listing.versions
    val kept = versions.toSet

    /** Why a removed version stops change data up to `last`, and from which version it can be read. */
    def removed(gone: Long, last: Long): VersionRemovedException = {
      // The oldest version of the run of versions left that ends at `last` (a tagged old version may be left alone).
      var from = last
      while (from > 1 && kept(from - 1)) from -= 1
      val start = if (from == 1) 1L else from + 1
      val schemaBreak = if (start > last) None
        else new ChangeSchemas(table, (math.max(1L, start - 1) to last).map(snapshot)).breaks.lastOption
      val servable = schemaBreak.fold(start)(b => math.max(start, b.version + 1))
      val why =
        if (schemaBreak.exists(_.version + 1 == servable) && servable > start) s" (version ${servable - 1} ${schemaBreak.get.what})"
        else if (from > versions.head + 1) s" (versions ${versions.filter(_ < from).last + 1} to ${from - 1} are gone too)"
        else ""
      val advice =
        if (servable > last) s"no change data up to version $last can be read any more$why"
        else s"change data up to version $last can be read from version $servable on$why"
      new VersionRemovedException(ds.path, gone, versions.head, s"; $table: $advice")
    }

    def version(text: String, last: => Long): Long = {
      val v = text.trim.toLongOption.getOrElse(throw new InvalidOptionException("version",
        s"change data of $table: version '$text' is not a number; Lance versions are numbers"))
      if (!kept(v)) {
        if (v >= 1 && v < versions.last) throw removed(v, last)
        ds.checkVersion(v)
      }
      v
    }

    val (first, last) = range match {
      case r: ChangelogRange.VersionRange =>
        val end = if (r.endingVersion().isPresent) version(r.endingVersion().get(), versions.last) else versions.last
        val start = version(r.startingVersion(), end)
        if (end < start) throw new InvalidOptionException("version range",
          s"change data of $table from version $start to version $end: the range ends before it starts")
        // Without an end the range runs to the latest version, included.
        val endIncluded = r.endingBoundInclusive() || !r.endingVersion().isPresent
        (if (r.startingBoundInclusive()) start else start + 1, if (endIncluded) end else end - 1)
      case r: ChangelogRange.TimestampRange =>
        val startMicros = r.startingTimestamp()
        val endMicros = if (r.endingTimestamp().isPresent) r.endingTimestamp().get().longValue else Long.MaxValue
        if (endMicros < startMicros) throw new InvalidOptionException("timestamp range",
          s"change data of $table: the timestamp range ends before it starts")
        def inRange(micros: Long) =
          (micros > startMicros || (r.startingBoundInclusive() && micros == startMicros)) &&
            (micros < endMicros || (r.endingBoundInclusive() && micros == endMicros))
        val hit = versions.filter(v => inRange(snapshot(v).commitMicros))
        if (hit.isEmpty) (1L, 0L) else (hit.head, hit.last)
      case _ => (versions.head, versions.last)
    }
    if (first > last) return ChangeRange(first, last, Nil, None)
    // Commit v compares versions v-1 and v: every one of them must still be there.
    val compared = math.max(1L, first - 1) to last
    compared.find(!kept(_)).foreach(gone => throw removed(gone, last))
    val snapshots = compared.map(snapshot)
    val schemas = new ChangeSchemas(table, snapshots)
    schemas.breaks.lastOption.foreach(b => throw new ChangeDataSchemaException(table, first, last, b.version, b.column, b.what))
    ChangeRange(first, last, snapshots, Some(schemas))
  }
}
