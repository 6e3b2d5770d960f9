package sparklance.spark.changes

import org.apache.spark.sql.connector.catalog.ChangelogRange
import sparklance.format.table.Dataset

/**
 * Which commits a change-data range covers. Commit v is the change from version v-1 to v (the
 * first version's commit inserts every row it holds). Returns (first, last) inclusive; first >
 * last means no commit is in range.
 */
object ChangelogRanges {
  def commits(table: String, ds: Dataset, range: ChangelogRange): (Long, Long) = {
    val (first, last) = requested(table, ds, range)
    // Commit v compares versions v-1 and v: every one of them must still be there.
    val versions = ds.versions.toSet
    (math.max(1L, first - 1) to last).find(!versions.contains(_)).foreach { gone =>
      val oldest = ds.versions.head
      throw new IllegalArgumentException(s"Change data of $table for commits $first to $last needs version $gone, which " +
        s"cleanup (vacuum) removed; the oldest version left is $oldest, so change data starts at commit ${oldest + 1}")
    }
    (first, last)
  }

  private def requested(table: String, ds: Dataset, range: ChangelogRange): (Long, Long) = {
    val versions = ds.versions
    range match {
      case r: ChangelogRange.VersionRange =>
        val start = version(table, ds, r.startingVersion())
        val end = if (r.endingVersion().isPresent) version(table, ds, r.endingVersion().get()) else versions.last
        if (end < start) throw new IllegalArgumentException(
          s"Change data of $table from version $start to version $end: the range ends before it starts")
        // Without an end the range runs to the latest version, included.
        val endIncluded = r.endingBoundInclusive() || !r.endingVersion().isPresent
        (if (r.startingBoundInclusive()) start else start + 1, if (endIncluded) end else end - 1)
      case r: ChangelogRange.TimestampRange =>
        val startMicros = r.startingTimestamp()
        val endMicros = if (r.endingTimestamp().isPresent) r.endingTimestamp().get().longValue else Long.MaxValue
        if (endMicros < startMicros) throw new IllegalArgumentException(
          s"Change data of $table: the timestamp range ends before it starts")
        def inRange(micros: Long) =
          (micros > startMicros || (r.startingBoundInclusive() && micros == startMicros)) &&
            (micros < endMicros || (r.endingBoundInclusive() && micros == endMicros))
        val hit = versions.filter(v => inRange(ds.snapshot(Some(v)).commitMicros))
        if (hit.isEmpty) (1L, 0L) else (hit.head, hit.last)
      case _ => (versions.head, versions.last)
    }
  }

  private def version(table: String, ds: Dataset, text: String): Long = {
    val v = text.trim.toLongOption.getOrElse(throw new IllegalArgumentException(
      s"Change data of $table: version '$text' is not a number; Lance versions are numbers"))
    ds.checkVersion(v)
    v
  }
}
