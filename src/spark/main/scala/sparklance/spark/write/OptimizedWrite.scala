package sparklance.spark.write

import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import sparklance.format.table.FragmentWriter
import sparklance.spark.TableProperties

/**
 * Fewer, larger fragments from an append: without it each write task makes its own fragments, so
 * their count follows the input's partitions (a CTAS of 2.4M rows in 56 partitions made 56
 * fragments of 43k rows) rather than `max_rows_per_file`. The write asks Spark to rebalance its
 * input on a few columns with an advisory partition size of about one fragment's bytes; adaptive
 * execution then merges small partitions and splits skewed ones. The columns only spread rows:
 * no ordering or grouping is promised. Off with the table property or write option
 * `optimize_write` = false, and when adaptive execution is off (a plain shuffle would make
 * `spark.sql.shuffle.partitions` fragments). An ordered input keeps its order instead (see
 * [[OrderedInputRule]]). With sparklance's session extension, [[FragmentSizedShuffle]] then cuts the
 * shuffle into tasks of at most one fragment's rows.
 */
final case class OptimizedWrite(columns: Seq[String], advisoryPartitionBytes: Long) {
  /**
   * This write as an append's or overwrite's, whose commit packs partial fragments
   * ([[LanceBatchWrite]]), so that [[ShuffleFreeWrite]] may drop its shuffle. Its advisory size is
   * one byte less, registered as packing, which tells its shuffle from a row-level operation's
   * (those do not pack, their shuffle stays).
   */
  def packing: OptimizedWrite = {
    val advisory = advisoryPartitionBytes - 1
    FragmentSizedShuffle.fragmentRowsOf(advisoryPartitionBytes).foreach(FragmentSizedShuffle.register(advisory, _, packs = true))
    copy(advisoryPartitionBytes = advisory)
  }
}

object OptimizedWrite {
  private val MaxColumns = 4
  private val MinBytes = 16L << 20
  private val MaxBytes = 1L << 30

  /**
   * The shape of an append of `input` rows into a table with `config`; `bytesPerRow` is what a
   * row of the table takes on disk, when the table has rows to tell.
   */
  def plan(input: StructType, config: Map[String, String], options: Map[String, String], bytesPerRow: Option[Double]): Option[OptimizedWrite] = {
    val wanted = TableProperties.OptimizeWrite.of(options, config) && !options.contains(OrderedInputRule.Kept)
    val spreading = input.fields.filter(f => hashable(f.dataType)).take(MaxColumns).map(_.name).toSeq
    if (!wanted || spreading.isEmpty || !SQLConf.get.adaptiveExecutionEnabled) None
    else {
      // Spark's shuffle holds rows uncompressed: its own estimate of a row's size, or the bytes a row
      // took on disk if that is larger (long strings, vectors).
      val rowBytes = math.max(input.defaultSize.toDouble, bytesPerRow.getOrElse(0.0))
      val rows = FragmentWriter.maxRowsPerFile(config)
      val advisory = math.min(MaxBytes, math.max(MinBytes, (rows * rowBytes).toLong))
      // For the session extension's FragmentSizedShuffle, which sizes the write's tasks by rows.
      FragmentSizedShuffle.register(advisory, rows)
      Some(OptimizedWrite(spreading, advisory))
    }
  }

  private def hashable(t: DataType): Boolean = t match {
    case _: NumericType | StringType | BinaryType | BooleanType | DateType | TimestampType | TimestampNTZType => true
    case _ => false
  }
}
