package sparklance.spark.scan

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.FieldVector
import org.apache.spark.sql.connector.expressions.{Literal, NamedReference}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.ColumnVector
import org.roaringbitmap.RoaringBitmap
import scala.collection.mutable.ArrayBuffer
import scala.util.Using
import sparklance.format.Resources
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{FragmentScanner, LanceField, ScanBatch}
import sparklance.spark.rowlevel.{LongKeySet, SourceKeysContain}

/**
 * A runtime filter `column IN (keys)` that a row-level scan applies to its rows exactly: the
 * reader hands over only the rows whose value of the top-level integral `column` (of Spark type
 * `dataType`) is one of `keys`; a null is no key. It comes from the dynamic pruning filter
 * [[sparklance.spark.rowlevel.TargetKeyPruning]] puts on the target's read, `key IN (the source's
 * keys)`, which Spark evaluates only by handing it to the scan ([[LanceRowLevelScan.filter]]):
 * the rows it drops are rows the join or the condition it was taken from drops anyway, and
 * dropping them in the reader makes a filter of Spark's of its own, with another read of the
 * source, unnecessary ([[sparklance.spark.rowlevel.MergeSourceKeyFilter]]).
 */
final case class KeySetFilter(column: String, dataType: DataType, keys: Array[Long]) {
  // Built once per task, where the reader first tests a row.
  @transient private lazy val set = LongKeySet.of(keys.length, keys(_))

  /**
   * The rows of `batch` (its field `index`'s value is the key) whose key is in the set: `batch`
   * itself when all are, else a copy of those rows, `batch` closed; None when none is.
   */
  def select(batch: ScanBatch, index: Int, allocator: BufferAllocator): Option[ScanBatch] = {
    val rows = Array.range(0, batch.numRows)
    val n = Resources.closeOnFailure(Seq(batch))(keep(batch, index, rows, rows.length, allocator))
    if (n == batch.numRows) Some(batch)
    else try Option.when(n > 0)(KeySetFilter.copy(batch, rows, n, allocator)) finally batch.close()
  }

  /**
   * Keeps, of the `count` row indices first in `rows`, those whose key (field `index` of `batch`)
   * is in the set: they are moved to the front of `rows`, in order, and their number returned.
   */
  private def keep(batch: ScanBatch, index: Int, rows: Array[Int], count: Int, allocator: BufferAllocator): Int = {
    val adapted = ArrayBuffer.empty[AutoCloseable]
    try kept(FragmentSplitReader.sparkColumn(batch.vectors(index), dataType, allocator, adapted += _), rows, count)
    finally Resources.closeAll(adapted)
  }

  private def kept(key: ColumnVector, rows: Array[Int], count: Int): Int = {
    var k = 0
    var j = 0
    val nulls = key.hasNull
    // Typed getters in a loop per type: the test is made for every row of the target.
    dataType match {
      case LongType | TimestampType | TimestampNTZType =>
        while (j < count) { val i = rows(j); if (!(nulls && key.isNullAt(i)) && set.contains(key.getLong(i))) { rows(k) = i; k += 1 }; j += 1 }
      case IntegerType | DateType =>
        while (j < count) { val i = rows(j); if (!(nulls && key.isNullAt(i)) && set.contains(key.getInt(i).toLong)) { rows(k) = i; k += 1 }; j += 1 }
      case ShortType =>
        while (j < count) { val i = rows(j); if (!(nulls && key.isNullAt(i)) && set.contains(key.getShort(i).toLong)) { rows(k) = i; k += 1 }; j += 1 }
      case ByteType =>
        while (j < count) { val i = rows(j); if (!(nulls && key.isNullAt(i)) && set.contains(key.getByte(i).toLong)) { rows(k) = i; k += 1 }; j += 1 }
    }
    k
  }
}

object KeySetFilter {
  /**
   * The offsets of the rows of `fragment` in [start, end) (and in `within`) whose keys every
   * filter keeps, from a read of the key columns alone (each filter with the Lance field of its
   * column), so that a MERGE's scan decodes its other columns for those rows only, as
   * [[Prefilter]] does for an UPDATE's condition; None when they are more than
   * [[Prefilter.MaxSparseShare]] of the rows scanned (the split is read whole, and its batches
   * narrowed by [[KeySetFilter.select]]). `bytesRead` is told the bytes read.
   */
  def rows(filters: Seq[(KeySetFilter, LanceField)], target: ReadTarget, fragment: DataFragment, start: Long, end: Long,
      within: Option[RoaringBitmap], allocator: BufferAllocator, bytesRead: Long => Unit): Option[RoaringBitmap] = {
    val fields = filters.map(_._2).distinctBy(_.name)
    val kept = new RoaringBitmap
    var scanned = 0L
    Using.resource(new FragmentScanner(target.storage, target.files, fragment, fields, allocator, start, end,
        batchBytes = target.batchBytes, within = within)) { scanner =>
      while (scanner.hasNext) Using.resource(scanner.next()) { batch =>
        val rows = Array.range(0, batch.numRows)
        val n = filters.foldLeft(rows.length) { case (count, (f, field)) =>
          if (count == 0) 0 else f.keep(batch, fields.indexWhere(_.name == field.name), rows, count, allocator)
        }
        var j = 0
        while (j < n) { kept.add(batch.offset(rows(j))); j += 1 }
        scanned += batch.numRows
      }
      bytesRead(scanner.bytesRead)
    }
    Option.when(kept.getLongCardinality <= scanned * Prefilter.MaxSparseShare)(kept)
  }

  /**
   * The filter `p` is, when it is `c IN (literals)` or `c = literal` on a top-level column `c` of
   * `schema` (the columns the scan reads) of an integral type ([[SourceKeysContain.supports]]).
   */
  def of(p: Predicate, schema: StructType): Option[KeySetFilter] = {
    val children = p.children().toSeq
    val column = (p.name(), children.headOption) match {
      case ("IN" | "=", Some(r: NamedReference)) if r.fieldNames().length == 1 =>
        schema.fields.find(_.name == r.fieldNames()(0)).filter(f => SourceKeysContain.supports(f.dataType))
      case _ => None
    }
    val values = children.drop(1).map {
      case l: Literal[_] => Some(l.value())
      case _ => None
    }
    // A null is no key: `c IN (..., NULL)` is never true.
    val keys = values.flatten.filter(_ != null)
    column.filter(_ => values.forall(_.isDefined) && keys.forall(_.isInstanceOf[java.lang.Number])).map { f =>
      KeySetFilter(f.name, f.dataType, keys.map(_.asInstanceOf[java.lang.Number].longValue).toArray)
    }
  }

  /** The `n` rows of `batch` at `rows(0 until n)`, copied. */
  private def copy(batch: ScanBatch, rows: Array[Int], n: Int, allocator: BufferAllocator): ScanBatch = {
    val copies = ArrayBuffer.empty[FieldVector]
    Resources.closeOnFailure(copies) {
      batch.vectors.foreach { from =>
        val pair = from.getTransferPair(allocator)
        val to = pair.getTo.asInstanceOf[FieldVector]
        copies += to
        to.setInitialCapacity(n)
        to.allocateNew()
        var i = 0
        while (i < n) { pair.copyValueSafe(rows(i), i); i += 1 }
        to.setValueCount(n)
      }
      new ScanBatch(copies.toSeq, Array.tabulate(n)(i => batch.offset(rows(i))))
    }
  }
}
