package sparklance.spark.scan

import org.apache.arrow.memory.BufferAllocator
import org.apache.spark.sql.catalyst.expressions.{AttributeSet, Expression, Predicate, SubqueryExpression}
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}
import org.roaringbitmap.RoaringBitmap
import scala.util.Using
import sparklance.format.Resources
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{FragmentScanner, LanceField}
import sparklance.spark.LanceTable

/**
 * Late materialization for the scan of a DELETE / UPDATE / MERGE, or of a query filtering the rows
 * it reads ([[ScanPrefilterStrategy]]): the reader decodes a split's
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

  /** The rows of a split's first batch at most: a small first batch finds a dense split early. */
  val ProbeRows: Long = 1L << 16

  /**
   * Rows per batch of the reads that only choose rows (of the condition's columns here, of the
   * key columns in [[KeySetFilter.rows]]). Their batches stay in the reader, so they may be larger
   * than the batches handed to Spark: at 8,192 rows a batch, a MERGE's read of ten million keys
   * paid the per-batch costs of decoding 1,221 times. Batches stay within the read's byte budget.
   */
  val ChoosingBatchRows: Int = 1 << 16

  /**
   * Whether `conjunct`, of a filter on the rows of a scan with output `target`, is one the reader
   * can evaluate itself, on columns of plain types, before it reads the others: deterministic,
   * without subqueries, on data columns only.
   */
  def evaluable(conjunct: Expression, target: AttributeSet): Boolean =
    conjunct.deterministic && !SubqueryExpression.hasSubquery(conjunct) && conjunct.references.nonEmpty &&
      conjunct.references.subsetOf(target) &&
      conjunct.references.forall(a => !LanceTable.MetadataNames.contains(a.name) && plain(a.dataType))

  /** Types the scan reads as they are: no nesting, no blobs, nothing read as NULL. */
  private def plain(t: DataType): Boolean = t match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | DateType | TimestampType |
         TimestampNTZType | _: DecimalType | _: StringType => true
    case _ => false
  }

  /**
   * Whether a prefilter on `conditionColumns` pays in a scan decoding `dataColumns`: only where the
   * scan reads other columns too, whose decoding it spares for the rows the condition drops.
   */
  def pays(conditionColumns: Set[String], dataColumns: Set[String]): Boolean =
    conditionColumns.subsetOf(dataColumns) && !dataColumns.subsetOf(conditionColumns)

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
    var scanned, keptRows = 0L
    def sparse = keptRows <= scanned * MaxSparseShare
    // A first batch of at most ProbeRows rows, and no batch after the rows kept so far stop being
    // sparse: where the condition keeps most rows, the split is read whole, and its columns are
    // decoded here for the first batch only.
    Using.resource(new FragmentScanner(target.storage, target.files, fragment, prefilter.fields, allocator, start, end,
        batchRows = ChoosingBatchRows, batchBytes = target.batchBytes, within = within)) { scanner =>
      def nextBatch() =
        if (scanned == 0 && scanner.nextOffset < start + ProbeRows) scanner.nextBelow(start + ProbeRows) else scanner.next()
      while (sparse && scanner.hasNext) Using.resource(nextBatch()) { batch =>
        val adapted = Seq.newBuilder[AutoCloseable]
        try {
          val columns: Array[ColumnVector] = prefilter.schema.fields.zip(batch.vectors).map { case (f, raw) =>
            FragmentSplitReader.sparkColumn(raw, f.dataType, allocator, adapted += _)
          }
          val n = batch.numRows
          val keep = columnar match {
            case Some(condition) => condition.keep(columns, n)
            case None =>
              val rows = new ColumnarBatch(columns, n)
              Array.tabulate(n)(i => predicate.eval(rows.getRow(i)))
          }
          var i = 0
          while (i < n) { if (keep(i)) keptRows += 1; i += 1 }
          scanned += n
          // Offsets of the kept rows only: most rows fail an UPDATE's or DELETE's condition, and
          // an array of every row's offset cost as much as evaluating the condition on them.
          if (sparse) {
            i = 0
            while (i < n) { if (keep(i)) kept.add(batch.offset(i)); i += 1 }
          }
        } finally Resources.closeAll(adapted.result())
      }
      bytesRead(scanner.bytesRead)
    }
    Option.when(sparse)(kept)
  }
}
