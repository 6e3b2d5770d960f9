package sparklance.format.skipping

/**
 * One zone of a ZONEMAP index: live rows of one fragment within physical offsets
 * [start, start + length) (deleted rows inside the span count in its length), with the bounds of
 * its non-null values (None where it holds none: all null, or for `min` all NaN) and how many of
 * them are null and NaN. A zone holding a NaN has NaN as its `max` (LANCE-SCALAR-INDICES.md §2.3).
 */
final case class Zone(fragmentId: Long, start: Long, length: Long, min: Option[ZoneValue], max: Option[ZoneValue],
    nullCount: Long, nanCount: Long) {
  def end: Long = start + length
}
