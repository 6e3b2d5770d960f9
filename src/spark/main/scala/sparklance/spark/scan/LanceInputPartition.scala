package sparklance.spark.scan

import org.apache.spark.sql.connector.read.InputPartition

/**
 * What one task reads: splits of fragments, in table order (see [[SplitPacking]]), at most
 * `limit` live rows of them all.
 */
final case class LanceInputPartition(splits: IndexedSeq[FragmentSplit], limit: Option[Int] = None) extends InputPartition {
  require(splits.nonEmpty, "An input partition reads at least one split")
}
