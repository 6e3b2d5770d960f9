package sparklance.format.maintenance

import java.util.Locale
import sparklance.format.InvalidOptionException
import sparklance.format.table.FragmentWriter

/**
 * The options of a compaction, named and defaulted as pylance's `compact_files`. Each may also
 * come from the table config as `lance.compaction.<name>`; an explicit option wins over the
 * config, the config over the default, as in Lance.
 */
final case class CompactionOptions(
    targetRowsPerFragment: Long = CompactionOptions.DefaultTargetRows,
    materializeDeletions: Boolean = true,
    materializeDeletionsThreshold: Double = 0.1,
    maxSourceFragments: Option[Long] = None,
    maxSourceRows: Option[Long] = None,
    maxSourceBytes: Option[Long] = None,
    excludedFragmentIds: Set[Long] = Set.empty,
    wholeBins: Boolean = false) {

  // `wholeBins`: every fragment the indices let a rewrite touch is rewritten, each run of fragments
  // under the same indices as one task, so that the task can lay out all their rows anew (sorted
  // or Z-ordered across them) instead of only merging small fragments. Not one of pylance's options.

  /** A threshold of 1.0 or more can never be exceeded: Lance then treats materialization as off. */
  def materializes: Boolean = materializeDeletions && materializeDeletionsThreshold < 1.0
}

object CompactionOptions {
  val DefaultTargetRows: Long = 1024L * 1024
  val ConfigPrefix = "lance.compaction."

  val TargetRowsPerFragment = "target_rows_per_fragment"
  val MaterializeDeletions = "materialize_deletions"
  val MaterializeDeletionsThreshold = "materialize_deletions_threshold"
  val MaxSourceFragments = "max_source_fragments"
  val MaxSourceRows = "max_source_rows"
  val MaxSourceBytes = "max_source_bytes"

  /** The options this library applies; Lance's other compaction keys tune its own writer and are ignored. */
  val Names: Seq[String] = Seq(TargetRowsPerFragment, MaterializeDeletions, MaterializeDeletionsThreshold,
    MaxSourceFragments, MaxSourceRows, MaxSourceBytes)

  /**
   * Options from explicit values (by name, as strings) over the table config's `lance.compaction.*`
   * keys. An unknown explicit name or a value that does not parse is an [[InvalidOptionException]]
   * naming it; unknown config keys are left to the writers that know them.
   */
  def resolve(explicit: Map[String, String], tableConfig: Map[String, String]): CompactionOptions = {
    explicit.keys.find(k => !Names.contains(k)).foreach(k =>
      throw new InvalidOptionException(k, s"unknown compaction option; the options are ${Names.mkString(", ")}"))
    val fromConfig = tableConfig.collect { case (k, v) if k.startsWith(ConfigPrefix) && Names.contains(k.stripPrefix(ConfigPrefix)) =>
      k.stripPrefix(ConfigPrefix) -> (k, v) }
    val values = fromConfig ++ explicit.map { case (k, v) => k -> (k, v) }
    def get[T](name: String)(parse: (String, String) => T): Option[T] = values.get(name).map { case (label, v) => parse(label, v) }
    val d = CompactionOptions()
    CompactionOptions(
      targetRowsPerFragment = get(TargetRowsPerFragment)(positive).map(capped).getOrElse(d.targetRowsPerFragment),
      materializeDeletions = get(MaterializeDeletions)(boolean).getOrElse(d.materializeDeletions),
      materializeDeletionsThreshold = get(MaterializeDeletionsThreshold)(fraction).getOrElse(d.materializeDeletionsThreshold),
      maxSourceFragments = get(MaxSourceFragments)(positive),
      maxSourceRows = get(MaxSourceRows)(positive),
      maxSourceBytes = get(MaxSourceBytes)(positive))
  }

  // A fragment holds at most u32::MAX rows, so a larger target behaves as that.
  private def capped(rows: Long): Long = math.min(rows, FragmentWriter.MaxRowsPerFile)

  private def positive(name: String, v: String): Long =
    v.trim.toLongOption.filter(_ > 0).getOrElse(throw new InvalidOptionException(name, s"'$v' is not an integer greater than 0"))

  private def boolean(name: String, v: String): Boolean = v.trim.toLowerCase(Locale.ROOT) match {
    case "true" => true
    case "false" => false
    case _ => throw new InvalidOptionException(name, s"'$v' is not true or false")
  }

  private def fraction(name: String, v: String): Double =
    v.trim.toDoubleOption.filter(d => !d.isNaN && d >= 0).getOrElse(
      throw new InvalidOptionException(name, s"'$v' is not a number of 0 or more (a fraction of a fragment's rows)"))
}
