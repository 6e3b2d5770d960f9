package sparklance.spark.scan

import org.apache.arrow.memory.BufferAllocator
import org.apache.spark.sql.catalyst.expressions.{Expression, Predicate}
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}
import org.roaringbitmap.RoaringBitmap
import scala.util.Using
import sparklance.format.Resources
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{FragmentScanner, LanceField}

/**
 * Late materialization for the scan of a DELETE / UPDATE / MERGE: the reader decodes a split's
 * `fields` (the columns of the statement's condition on the target, of Spark types `schema`, in
 * that order) first, keeps the offsets of the rows `condition` (bound to `schema`) holds for, and
 * reads the statement's other columns of those rows only. Spark's filter above the scan still
 * evaluates the condition: the prefilter decides nothing, it spares decoding the other columns of
 * rows the statement leaves alone, and stands in for Spark's runtime group filter, whose job reads
 * the condition's columns of every fragment to find the fragments holding matches.
 */
final case class Prefilter(fieldBytes: Array[Array[Byte]], schema: StructType, condition: Expression) {
  def fields: Seq[LanceField] = ReadTarget.decode(fieldBytes)
}

object Prefilter {
  /**
   * Where the condition keeps more than this share of a split's rows, the split is read whole:
   * reading scattered rows saves little then, and Spark's filter drops the others as before.
   */
  val MaxSparseShare = 0.5

  /**
   * The offsets of the rows of `fragment` in [start, end) (and in `within`, the rows data skipping
   * kept) that `prefilter` keeps, or None when they are too many to read apart
   * ([[MaxSparseShare]]); `bytesRead` is told the bytes read.
   */
  def rows(prefilter: Prefilter, target: ReadTarget, fragment: DataFragment, start: Long, end: Long,
      within: Option[RoaringBitmap], allocator: BufferAllocator, bytesRead: Long => Unit): Option[RoaringBitmap] = {
    // Column by column where the condition's shape allows, else row by row through Spark's predicate.
    val columnar = ColumnarCondition.compile(prefilter.condition)
    lazy val predicate = { val p = Predicate.create(prefilter.condition); p.initialize(0); p }
    val kept = new RoaringBitmap
    var scanned = 0L
    Using.resource(new FragmentScanner(target.storage, target.files, fragment, prefilter.fields, allocator, start, end,
        batchBytes = target.batchBytes, within = within)) { scanner =>
      while (scanner.hasNext) Using.resource(scanner.next()) { batch =>
        val adapted = Seq.newBuilder[AutoCloseable]
        try {
          val columns: Array[ColumnVector] = prefilter.schema.fields.zip(batch.vectors).map { case (f, raw) =>
            FragmentSplitReader.sparkColumn(raw, f.dataType, allocator, adapted += _)
          }
          val rows = new ColumnarBatch(columns, batch.numRows)
          // Offsets of the kept rows only: most rows fail an UPDATE's or DELETE's condition, and
          // an array of every row's offset cost as much as evaluating the condition on them.
          var i = 0
          columnar match {
            case Some(condition) =>
              val keep = condition.keep(columns, batch.numRows)
              while (i < batch.numRows) {
                if (keep(i)) kept.add(batch.offset(i))
                i += 1
              }
            case None =>
              while (i < batch.numRows) {
                if (predicate.eval(rows.getRow(i))) kept.add(batch.offset(i))
                i += 1
              }
          }
          scanned += batch.numRows
        } finally Resources.closeAll(adapted.result())
      }
      bytesRead(scanner.bytesRead)
    }
    Option.when(kept.getLongCardinality <= scanned * MaxSparseShare)(kept)
  }
}
