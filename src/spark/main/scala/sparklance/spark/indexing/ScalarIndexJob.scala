package sparklance.spark.indexing

import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.complex.{LargeListVector, ListVector}
import org.apache.spark.SparkContext
import org.apache.spark.sql.SparkSession
import org.roaringbitmap.RoaringBitmap
import scala.collection.mutable
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.index.scalar.{BTreeIndexFiles, RowAddressTreemap, ScalarKeyOrdering}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.skipping.{ZoneValue, ZoneValues}
import sparklance.format.table.{BasePaths, LanceField}

/**
 * The entries of BTREE, BITMAP and LABEL_LIST indices over every live row of some fragments, one
 * Spark task a fragment, each reading only the indexed column.
 */
object ScalarIndexJob {
  /**
   * What a BITMAP (or a LABEL_LIST, over list elements) holds: one treemap of row addresses a
   * distinct key, sorted by key with the null key first, and for a LABEL_LIST the treemap of rows
   * whose list is null. Each task returns its fragment's offsets per key; the driver merges them.
   */
  def bitmaps(spark: SparkSession, tableName: String, files: BasePaths, storageConf: Map[String, String],
      fragments: Seq[DataFragment], field: LanceField, labelList: Boolean): (Seq[(Option[ZoneValue], Array[Byte])], Option[Array[Byte]]) = {
    val postings = described(spark, s"${if (labelList) "LABEL_LIST" else "BITMAP"} index of ${field.name} on $tableName", fragments) {
      val fieldBytes = ColumnScan.proto(field)
      parallel(spark.sparkContext, fragments).flatMap { bytes =>
        val fragment = DataFragment.parseFrom(bytes)
        val byKey = mutable.TreeMap.empty[Option[ZoneValue], RoaringBitmap](ScalarKeyOrdering)
        val listNulls = new RoaringBitmap()
        ColumnScan.foreach(files, storageConf, fragment, fieldBytes) { (vector, i, offset) =>
          if (!labelList) byKey.getOrElseUpdate(ZoneValues.at(vector, i), new RoaringBitmap()).add(offset)
          else elements(vector, i) match {
            case None => listNulls.add(offset)
            case Some(values) => values.foreach(v => byKey.getOrElseUpdate(v, new RoaringBitmap()).add(offset))
          }
        }
        // (key, whether it is the list-null entry, fragment, offsets)
        byKey.toSeq.map { case (k, b) => (k, false, fragment.getId, PortableBitmaps.toBytes(b)) } ++
          (if (listNulls.isEmpty) Nil else Seq((None, true, fragment.getId, PortableBitmaps.toBytes(listNulls))))
      }.collect().toSeq
    }
    def treemap(entries: Seq[(Option[ZoneValue], Boolean, Long, Array[Byte])]): Array[Byte] =
      RowAddressTreemap.encode(entries.groupMapReduce(_._3)(e => PortableBitmaps.fromBytes(e._4))((a, b) => RoaringBitmap.or(a, b)))
    val (nulls, keyed) = postings.partition(_._2)
    val byKey = mutable.TreeMap.empty[Option[ZoneValue], mutable.ArrayBuffer[(Option[ZoneValue], Boolean, Long, Array[Byte])]](ScalarKeyOrdering)
    keyed.foreach(e => byKey.getOrElseUpdate(e._1, mutable.ArrayBuffer.empty) += e)
    val keys = byKey.toSeq.map { case (k, entries) => k -> treemap(entries.toSeq) }
    (keys, if (labelList) Some(treemap(nulls)) else None)
  }

  /**
   * Writes the entries of a BTREE to `out`: every live row's value and row address, sorted by a
   * Spark sort (range partitioned by value) and streamed to the driver partition by partition.
   */
  def btree(spark: SparkSession, tableName: String, files: BasePaths, storageConf: Map[String, String],
      fragments: Seq[DataFragment], field: LanceField, out: BTreeIndexFiles): Long =
    described(spark, s"BTREE index of ${field.name} on $tableName", fragments) {
      val fieldBytes = ColumnScan.proto(field)
      val entries = parallel(spark.sparkContext, fragments).flatMap { bytes =>
        val fragment = DataFragment.parseFrom(bytes)
        val found = mutable.ArrayBuffer.empty[(Option[ZoneValue], Long)]
        ColumnScan.foreach(files, storageConf, fragment, fieldBytes) { (vector, i, offset) =>
          found += ZoneValues.at(vector, i) -> ((fragment.getId << 32) | Integer.toUnsignedLong(offset))
        }
        found
      }
      var n = 0L
      entries.sortBy(identity, ascending = true, math.max(1, fragments.size))(ScalarKeyOrdering.withAddress, implicitly)
        .toLocalIterator.foreach { case (v, a) => out.add(v, a); n += 1 }
      n
    }

  /** The values of list `i` of `vector`; None where the list is null. */
  private def elements(vector: FieldVector, i: Int): Option[Seq[Option[ZoneValue]]] =
    if (vector.isNull(i)) None
    else vector match {
      case l: ListVector => Some((l.getElementStartIndex(i) until l.getElementEndIndex(i)).map(ZoneValues.at(l.getDataVector, _)))
      case l: LargeListVector =>
        Some((l.getElementStartIndex(i) until l.getElementEndIndex(i)).map(j => ZoneValues.at(l.getDataVector, Math.toIntExact(j))))
      case other => throw new IllegalArgumentException(s"${other.getField} is not a list column")
    }

  private def parallel(sc: SparkContext, fragments: Seq[DataFragment]) =
    sc.parallelize(fragments.map(_.toByteArray), math.max(1, fragments.size))

  private def described[T](spark: SparkSession, what: String, fragments: Seq[DataFragment])(body: => T): T = {
    val sc = spark.sparkContext
    val previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(s"$what: ${fragments.size} fragment(s)")
    try body finally sc.setJobDescription(previous)
  }
}
