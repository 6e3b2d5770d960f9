package sparklance.spark.indexing

import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.complex.{LargeListVector, ListVector}
import org.apache.spark.SparkContext
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.functions.{col, spark_partition_id}
import org.roaringbitmap.RoaringBitmap
import scala.collection.mutable
import scala.jdk.CollectionConverters._
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
        // A hash map, not a tree: a row's key found without comparisons. Doubles are hashed by
        // their key in Lance's order (all NaNs one key, -0.0 not 0.0); their value by its first row.
        val byKey = new java.util.HashMap[Any, (Option[ZoneValue], RoaringBitmap)]()
        def add(value: Option[ZoneValue], offset: Int): Unit = {
          val hashKey: Any = value match {
            case Some(ZoneValue.Floating(d)) => ScalarKeyOrdering.doubleKey(d)
            case other => other
          }
          var entry = byKey.get(hashKey)
          if (entry == null) { entry = value -> new RoaringBitmap(); byKey.put(hashKey, entry) }
          entry._2.add(offset)
        }
        val listNulls = new RoaringBitmap()
        ColumnScan.foreach(files, storageConf, fragment, fieldBytes) { (vector, i, offset) =>
          if (!labelList) add(ZoneValues.at(vector, i), offset)
          else elements(vector, i) match {
            case None => listNulls.add(offset)
            case Some(values) => values.foreach(add(_, offset))
          }
        }
        // (key, whether it is the list-null entry, fragment, offsets)
        byKey.values.asScala.toSeq.map { case (k, b) => (k, false, fragment.getId, PortableBitmaps.toBytes(b)) } ++
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
   * Writes the entries of a BTREE to `out`: every live row's value and row address in order (see
   * [[BTreeSortKey]]), sorted by Spark SQL. Up to [[DriverMergeRowsKey]] rows (default
   * [[DefaultDriverMergeRows]]) each task sorts its fragment's rows and the driver merges the
   * sorted runs, which a build of a million rows finishes in a fraction of a shuffle's time; more
   * are range partitioned by value, sorted, and streamed to the driver one partition at a time.
   * (An RDD sort of the values as objects spent nine tenths of a build serializing and comparing.)
   */
  def btree(spark: SparkSession, tableName: String, files: BasePaths, storageConf: Map[String, String],
      fragments: Seq[DataFragment], field: LanceField, out: BTreeIndexFiles): Long =
    described(spark, s"BTREE index of ${field.name} on $tableName", fragments) {
      val fieldBytes = ColumnScan.proto(field)
      val key = BTreeSortKey.of(field.arrowType)
      val rows = parallel(spark.sparkContext, fragments).flatMap { bytes =>
        val fragment = DataFragment.parseFrom(bytes)
        val found = mutable.ArrayBuffer.empty[Row]
        ColumnScan.foreach(files, storageConf, fragment, fieldBytes) { (vector, i, offset) =>
          found += key.row(ZoneValues.at(vector, i), (fragment.getId << 32) | Integer.toUnsignedLong(offset))
        }
        found
      }
      val frame = spark.createDataFrame(rows, key.schema)
      val order = Seq(col("key").asc_nulls_first, col("address").asc)
      val rowCount = fragments.map(_.getPhysicalRows).sum
      val mergeLimit = spark.conf.getOption(DriverMergeRowsKey).map(_.toLong).getOrElse(DefaultDriverMergeRows)
      var n = 0L
      def add(entry: (Option[ZoneValue], Long)): Unit = { out.add(entry._1, entry._2); n += 1 }
      if (rowCount <= mergeLimit) {
        // Sorted runs, one a task, collected in task order with their task's number to split them by.
        val sorted = frame.sortWithinPartitions(order: _*).withColumn("run", spark_partition_id()).collect()
        val runAt = key.schema.size
        val starts = (0 until sorted.length).filter(i => i == 0 || sorted(i).getInt(runAt) != sorted(i - 1).getInt(runAt)) :+ sorted.length
        val heads = mutable.PriorityQueue.empty[((Option[ZoneValue], Long), Int, Int)](
          Ordering.by[((Option[ZoneValue], Long), Int, Int), (Option[ZoneValue], Long)](_._1)(ScalarKeyOrdering.withAddress).reverse)
        def entry(i: Int) = key.value(sorted(i)) -> key.address(sorted(i))
        starts.sliding(2).foreach { case Seq(from, until) => if (from < until) heads.enqueue((entry(from), from, until)) }
        while (heads.nonEmpty) {
          val (head, at, until) = heads.dequeue()
          add(head)
          sorted(at) = null // let the driver drop rows as they are written
          if (at + 1 < until) heads.enqueue((entry(at + 1), at + 1, until))
        }
      } else {
        // Enough partitions for every core, each small enough for the driver to take one at a time.
        val partitions = math.max(spark.sparkContext.defaultParallelism, Math.toIntExact(rowCount / RowsPerSortPartition + 1))
        frame.repartitionByRange(partitions, order: _*).sortWithinPartitions(order: _*)
          .toLocalIterator().asScala.foreach(r => add(key.value(r) -> key.address(r)))
      }
      n
    }

  /**
   * The session setting of how many rows (physical rows of the fragments indexed) a BTREE build
   * sorts without a shuffle, merging the tasks' sorted runs on the driver, which holds them all.
   */
  val DriverMergeRowsKey = "spark.sparklance.index.btree_driver_merge_rows"
  val DefaultDriverMergeRows: Long = 2L << 20

  /** Rows a partition of a BTREE build's shuffle sort holds at most (about), as the driver receives them one partition at a time. */
  private val RowsPerSortPartition = 4L << 20

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
