package sparklance.format.skipping

/**
 * A column whose zones a writer gathers while it writes: its zone map's name, its field id (a
 * top-level field of the schema written) and the zone size. Serializable, so it travels to tasks.
 */
final case class ZoneColumn(indexName: String, fieldId: Int, rowsPerZone: Long) {
  require(rowsPerZone > 0, s"rows per zone of zone map $indexName must be positive, got $rowsPerZone")
}
