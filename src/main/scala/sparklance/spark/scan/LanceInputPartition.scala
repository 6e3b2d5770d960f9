package sparklance.spark.scan

import org.apache.spark.sql.connector.read.InputPartition

/** Physical rows [start, end) of one fragment (its DataFragment message as bytes), at most `limit` live ones. */
final case class LanceInputPartition(fragment: Array[Byte], start: Long, end: Long, limit: Option[Int] = None)
  extends InputPartition
