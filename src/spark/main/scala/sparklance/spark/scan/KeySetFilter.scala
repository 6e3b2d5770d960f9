package sparklance.spark.scan

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.FieldVector
import org.apache.spark.sql.connector.expressions.{Literal, NamedReference}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.ColumnVector
import org.apache.spark.unsafe.types.UTF8String
import org.roaringbitmap.RoaringBitmap
import scala.collection.mutable.ArrayBuffer
import scala.util.Using
import sparklance.format.Resources
import sparklance.format.file.RowSelection
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{FragmentScanner, LanceField, ScanBatch}
import sparklance.spark.rowlevel.{LongKeySet, SourceKeysContain}

/**
 * A runtime filter `column IN (keys)` that a row-level scan applies to its rows exactly: the
 * reader hands over only the rows whose value of the top-level `column` (of Spark type `dataType`:
 * integral, held as longs, or a string of binary collation, held as its UTF-8 bytes) is one of
 * `keys`; a null is no key. It comes from the dynamic pruning filter
 * [[sparklance.spark.rowlevel.TargetKeyPruning]] puts on the target's read, `key IN (the source's
 * keys)`, which Spark evaluates only by handing it to the scan ([[LanceRowLevelScan.filter]]):
 * the rows it drops are rows the join or the condition it was taken from drops anyway, and
 * dropping them in the reader makes a filter of Spark's of its own, with another read of the
 * source, unnecessary ([[sparklance.spark.rowlevel.MergeSourceKeyFilter]]).
 */
final case class KeySetFilter(column: String, dataType: DataType, keys: KeySetFilter.Keys) {
  /** The filter's column and values, by content: Spark may hand the same filter over twice. */
  def identity: (String, Seq[Any]) = column -> (keys match {
    case KeySetFilter.IntegralKeys(values) => values.toSeq
    case KeySetFilter.TextKeys(values) => values.toSeq.map(java.nio.ByteBuffer.wrap)
  })

  /**
   * The rows of `batch` (its field `index`'s value is the key) whose key is in the set: `batch`
   * itself when all are, else a copy of those rows, `batch` closed; None when none is.
   */
  def select(batch: ScanBatch, index: Int, allocator: BufferAllocator): Option[ScanBatch] = {
    val rows = Array.range(0, batch.numRows)
    val n = Resources.closeOnFailure(Seq(batch))(keep(batch, index, rows, rows.length, new Array[Long](rows.length), allocator))
    if (n == batch.numRows) Some(batch)
    else try Option.when(n > 0)(KeySetFilter.copy(batch, rows, n, allocator)) finally batch.close()
  }

  /**
   * Keeps, of the `count` row indices first in `rows`, those whose key (field `index` of `batch`)
   * is in the set: they are moved to the front of `rows`, in order, and their number returned.
   * `values` is room for as many keys, as [[kept]] needs.
   */
  private def keep(batch: ScanBatch, index: Int, rows: Array[Int], count: Int, values: Array[Long], allocator: BufferAllocator): Int = {
    val adapted = ArrayBuffer.empty[AutoCloseable]
    try kept(FragmentSplitReader.sparkColumn(batch.vectors(index), dataType, allocator, adapted += _), rows, count, values)
    finally Resources.closeAll(adapted)
  }

  /**
   * Keeps, of the `count` row indices first in `rows`, those whose `key` is in the set (see
   * [[keep]]). Integral keys are first copied into `values` (at least `count` long), non-null ones
   * only, for [[LongKeySet.retain]].
   */
  private def kept(key: ColumnVector, rows: Array[Int], count: Int, values: Array[Long]): Int = {
    var k = 0
    var j = 0
    val nulls = key.hasNull
    // Typed getters in a loop per type: the test is made for every row of the target.
    keys match {
      case text: KeySetFilter.TextKeys =>
        val texts = text.set
        while (j < count) { val i = rows(j); if (!(nulls && key.isNullAt(i)) && texts.contains(key.getUTF8String(i))) { rows(k) = i; k += 1 }; j += 1 }
        k
      case integral: KeySetFilter.IntegralKeys =>
        dataType match {
          case LongType | TimestampType | TimestampNTZType =>
            while (j < count) { val i = rows(j); if (!(nulls && key.isNullAt(i))) { rows(k) = i; values(k) = key.getLong(i); k += 1 }; j += 1 }
          case IntegerType | DateType =>
            while (j < count) { val i = rows(j); if (!(nulls && key.isNullAt(i))) { rows(k) = i; values(k) = key.getInt(i); k += 1 }; j += 1 }
          case ShortType =>
            while (j < count) { val i = rows(j); if (!(nulls && key.isNullAt(i))) { rows(k) = i; values(k) = key.getShort(i); k += 1 }; j += 1 }
          case ByteType =>
            while (j < count) { val i = rows(j); if (!(nulls && key.isNullAt(i))) { rows(k) = i; values(k) = key.getByte(i); k += 1 }; j += 1 }
        }
        integral.set.retain(values, rows, k)
    }
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
        batchRows = Prefilter.ChoosingBatchRows, batchBytes = target.batchBytes, within = within)) { scanner =>
      // One array of row numbers (and of keys) for every batch: an array per batch was a seventh
      // of what a MERGE testing ten million keys allocated.
      var rows = Array.emptyIntArray
      var values = Array.emptyLongArray
      while (scanner.hasNext) Using.resource(scanner.next()) { batch =>
        if (rows.length < batch.numRows) { rows = new Array[Int](batch.numRows); values = new Array[Long](batch.numRows) }
        var j = 0
        while (j < batch.numRows) { rows(j) = j; j += 1 }
        val n = filters.foldLeft(batch.numRows) { case (count, (f, field)) =>
          if (count == 0) 0 else f.keep(batch, fields.indexWhere(_.name == field.name), rows, count, values, allocator)
        }
        j = 0
        while (j < n) { kept.add(batch.offset(rows(j))); j += 1 }
        scanned += batch.numRows
      }
      bytesRead(scanner.bytesRead)
    }
    Option.when(kept.getLongCardinality <= scanned * Prefilter.MaxSparseShare)(kept)
  }

  /** The filter's values: integral keys as longs, strings as their UTF-8 bytes. */
  sealed trait Keys extends Serializable
  final case class IntegralKeys(values: Array[Long]) extends Keys {
    // Built once per task, where the reader first tests a row.
    @transient lazy val set: LongKeySet = LongKeySet.of(values.length, values(_))
  }
  final case class TextKeys(values: Array[Array[Byte]]) extends Keys {
    @transient lazy val set: java.util.Set[UTF8String] =
      new java.util.HashSet[UTF8String](java.util.Arrays.asList(values.map(UTF8String.fromBytes): _*))
  }

  /**
   * Key types the reader tests exactly: integral ones ([[SourceKeysContain.supports]]) and strings
   * compared byte by byte (binary collation; under another, 'a' may equal 'A').
   */
  def supports(t: DataType): Boolean = SourceKeysContain.supports(t) || t == StringType

  /**
   * The filter `p` is, when it is `c IN (literals)` or `c = literal` on a top-level column `c` of
   * `schema` (the columns the scan reads) of a type the reader tests ([[supports]]).
   */
  def of(p: Predicate, schema: StructType): Option[KeySetFilter] = {
    val children = p.children()
    val column = (p.name(), children.headOption) match {
      case ("IN" | "=", Some(r: NamedReference)) if r.fieldNames().length == 1 =>
        schema.fields.find(_.name == r.fieldNames()(0)).filter(f => supports(f.dataType))
      case _ => None
    }
    // A MERGE's filter lists its source's every key: they are gathered in one pass into an array.
    // A null is no key: `c IN (..., NULL)` is never true.
    def gather[K: scala.reflect.ClassTag](key: PartialFunction[Any, K]): Option[Array[K]] = {
      val keys = Array.newBuilder[K]
      keys.sizeHint(children.length - 1)
      var i = 1
      var all = true
      while (all && i < children.length) {
        children(i) match {
          case l: Literal[_] if l.value() == null =>
          case l: Literal[_] if key.isDefinedAt(l.value()) => keys += key(l.value())
          case _ => all = false
        }
        i += 1
      }
      Option.when(all)(keys.result())
    }
    column.flatMap { f =>
      val held = f.dataType match {
        case _: StringType => gather { case s: UTF8String => s.getBytes }.map(TextKeys)
        case _ => gather { case n: java.lang.Number => n.longValue }.map { values =>
          // Sorted here, once, rather than by each task for LongKeySet.retain.
          java.util.Arrays.sort(values)
          IntegralKeys(values)
        }
      }
      held.map(KeySetFilter(f.name, f.dataType, _))
    }
  }

  /** The `n` rows of `batch` at `rows(0 until n)`, copied. */
  private def copy(batch: ScanBatch, rows: Array[Int], n: Int, allocator: BufferAllocator): ScanBatch = {
    val copies = ArrayBuffer.empty[FieldVector]
    Resources.closeOnFailure(copies) {
      val runs = RowSelection.Runs.of(rows, n)
      batch.vectors.foreach(from => copies += RowSelection.copy(from, runs, allocator))
      new ScanBatch(copies.toSeq, Array.tabulate(n)(i => batch.offset(rows(i))))
    }
  }
}
