package sparklance.format.rowids

import sparklance.format.CorruptFileException
import sparklance.format.proto.RowIdProtos.{RowDatasetVersionRun, RowDatasetVersionSequence}

/**
 * A fragment's per-row versions (`_row_created_at_version`, `_row_last_updated_at_version`) in row
 * offset order, serialized as a Lance RowDatasetVersionSequence: one run per stretch of equal
 * versions. Rows are mostly written and updated in batches, so a fragment usually has one run.
 */
object VersionSequences {
  /** Row offsets are u32, so a fragment cannot have more rows. */
  private val MaxFragmentRows = 1L << 32

  /** Each run's span is Range(first offset, end offset) within the fragment, as Lance writes it. */
  def encode(versions: Array[Long]): Array[Byte] = {
    val sequence = RowDatasetVersionSequence.newBuilder()
    var runStart = 0
    while (runStart < versions.length) {
      var runEnd = runStart + 1
      while (runEnd < versions.length && versions(runEnd) == versions(runStart)) runEnd += 1
      sequence.addRuns(run(runStart, runEnd, versions(runStart)))
      runStart = runEnd
    }
    sequence.build().toByteArray
  }

  /** All rows at one version: what a fresh fragment gets. No rows means no runs, as in Lance. */
  def uniform(rows: Long, version: Long): Array[Byte] = {
    require(rows >= 0, s"a fragment cannot have $rows rows")
    val sequence = RowDatasetVersionSequence.newBuilder()
    if (rows > 0) sequence.addRuns(run(0, rows, version))
    sequence.build().toByteArray
  }

  private def run(start: Long, end: Long, version: Long): RowDatasetVersionRun =
    RowDatasetVersionRun.newBuilder().setSpan(U64Segments.range(start, end)).setVersion(version).build()

  /**
   * One version per row. Only the number of values in a run's span counts, whatever kind of
   * segment it is: Lance masks deleted rows out of spans during compaction, which can leave a
   * span with holes.
   */
  def decode(bytes: Array[Byte], source: String): Array[Long] = {
    val sequence = parse(bytes, source)
    val out = new Array[Long](U64Segments.materializable(totalRows(sequence, source), source))
    var at = 0
    sequence.getRunsList.forEach { run =>
      val end = at + U64Segments.count(run.getSpan, source).toInt
      java.util.Arrays.fill(out, at, end, run.getVersion)
      at = end
    }
    out
  }

  /** A lookup of versions by row offset that expands no run. */
  def lookup(bytes: Array[Byte], source: String): VersionLookup = {
    val sequence = parse(bytes, source)
    totalRows(sequence, source)
    val runs = sequence.getRunsList
    val starts = new Array[Long](runs.size + 1)
    val versions = new Array[Long](runs.size)
    var k = 0
    while (k < runs.size) {
      starts(k + 1) = starts(k) + U64Segments.count(runs.get(k).getSpan, source)
      versions(k) = runs.get(k).getVersion
      k += 1
    }
    new VersionLookup(starts, versions)
  }

  /** Whether some row of the sequence is at `version`, without expanding it. */
  def mentions(bytes: Array[Byte], version: Long, source: String): Boolean = {
    val sequence = parse(bytes, source)
    totalRows(sequence, source)
    sequence.getRunsList.stream.anyMatch(run => run.getVersion == version && U64Segments.count(run.getSpan, source) > 0)
  }

  /** The number of rows the sequence covers, without expanding it. */
  def count(bytes: Array[Byte], source: String): Long = totalRows(parse(bytes, source), source)

  private def parse(bytes: Array[Byte], source: String): RowDatasetVersionSequence = {
    val sequence = U64Segments.parseMessage(bytes, "RowDatasetVersionSequence", source)(RowDatasetVersionSequence.parseFrom)
    sequence.getRunsList.forEach { run =>
      U64Segments.rejectUnknownFields(run, "RowDatasetVersionRun", source)
      if (!run.hasSpan) throw new CorruptFileException(source, s"a run at version ${run.getVersion} has no span")
    }
    sequence
  }

  private def totalRows(sequence: RowDatasetVersionSequence, source: String): Long = {
    var total = 0L
    sequence.getRunsList.forEach { run =>
      val n = U64Segments.count(run.getSpan, source)
      // checking each term first keeps the sum from wrapping before the limit sees it
      if (java.lang.Long.compareUnsigned(n, MaxFragmentRows) > 0 || total + n > MaxFragmentRows)
        throw new CorruptFileException(source,
          s"covers more than $MaxFragmentRows rows, more than a fragment's u32 row offsets can address")
      total += n
    }
    total
  }
}
