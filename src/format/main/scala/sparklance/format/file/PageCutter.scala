package sparklance.format.file

import org.apache.arrow.vector.FieldVector
import scala.jdk.CollectionConverters._
import sparklance.format.proto.FileProtos
import sparklance.format.table.LanceSchema

/**
 * What both file writers do with an incoming batch: check it against the schema, and cut each
 * top-level field's rows into pages of about `maxPageBytes` of Arrow data, never splitting a row.
 * `append(field, vector, start, count)` hands rows to the field's encoder; `flushPage(field)`
 * makes the rows appended since the last flush one page. It also keeps the file's life cycle: a
 * batch that fails halfway leaves a file that can no longer be finished.
 */
private[file] final class PageCutter(schema: LanceSchema, maxPageBytes: Long,
    append: (Int, FieldVector, Int, Int) => Unit, flushPage: Int => Unit) {
  require(maxPageBytes > 0, s"maxPageBytes must be positive, got $maxPageBytes")

  private val pendingBytes = new Array[Long](schema.fields.size)
  private val pendingRows = new Array[Long](schema.fields.size)
  private var rows = 0L
  private var state: PageCutter.FileState = PageCutter.Open

  /** Checks a batch (vectors in schema.fields order, one value count) and pages its rows. */
  def write(vectors: Seq[FieldVector]): Unit = {
    checkOpen()
    val n = rowsOf(vectors)
    state = PageCutter.Failed // until the rows are in: a half-appended batch must not become a file
    vectors.indices.foreach(i => add(i, vectors(i), n))
    rows += n
    state = PageCutter.Open
  }

  def rowCount: Long = rows

  /**
   * Ends the file: flushes every field's pending rows (every field, pending or not, when
   * `everyField`) and returns the FileDescriptor the file's first global buffer holds.
   */
  def finish(everyField: Boolean): Array[Byte] = {
    checkOpen()
    state = PageCutter.Finished
    schema.fields.indices.foreach(i => if (everyField || hasPending(i)) flush(i))
    FileProtos.FileDescriptor.newBuilder()
      .setSchema(FileProtos.Schema.newBuilder().addAllFields(schema.toProto.asJava).putAllMetadata(schema.metadataProto))
      .setLength(rows).build().toByteArray
  }

  private def checkOpen(): Unit = state match {
    case PageCutter.Open =>
    case PageCutter.Failed => throw new IllegalStateException("An earlier write failed; this Lance file cannot be completed")
    case PageCutter.Finished => throw new IllegalStateException("The Lance file was already finished")
  }

  /** The batch's row count, after checking it has one vector of the right type per field. */
  private def rowsOf(vectors: Seq[FieldVector]): Int = {
    require(vectors.size == schema.fields.size, s"Expected ${schema.fields.size} vectors (one per field), got ${vectors.size}")
    val n = vectors.headOption.map(_.getValueCount).getOrElse(0)
    vectors.zip(schema.fields).foreach { case (v, f) =>
      require(v.getValueCount == n, s"Vector '${v.getName}' has ${v.getValueCount} values, expected $n")
      // A field's vector has its Arrow type (a blob v2 field: the binary its values are).
      require(v.getField.getType == f.toArrow.getType,
        s"Vector '${v.getName}' has type ${v.getField.getType}, field '${f.name}' is ${f.arrowType}")
    }
    n
  }

  private def add(i: Int, v: FieldVector, n: Int): Unit = {
    var start = 0
    while (start < n) {
      var end = largestFit(v, start, n, maxPageBytes - pendingBytes(i))
      if (end == start && pendingRows(i) > 0) flush(i)
      else {
        if (end == start) end = start + 1
        append(i, v, start, end - start)
        pendingBytes(i) += RowBytes(v, start, end)
        pendingRows(i) += end - start
        if (end < n || pendingBytes(i) >= maxPageBytes) flush(i)
        start = end
      }
    }
  }

  private def hasPending(i: Int): Boolean = pendingRows(i) > 0

  private def flush(i: Int): Unit = {
    flushPage(i)
    pendingBytes(i) = 0
    pendingRows(i) = 0
  }

  /** The largest `end` in `[start, n]` whose rows `[start, end)` take at most `room` bytes. */
  private def largestFit(v: FieldVector, start: Int, n: Int, room: Long): Int =
    if (RowBytes(v, start, n) <= room) n
    else {
      var (lo, hi) = (start, n) // fits(lo), !fits(hi)
      while (hi - lo > 1) {
        val mid = lo + (hi - lo) / 2
        if (RowBytes(v, start, mid) <= room) lo = mid else hi = mid
      }
      lo
    }
}

private[file] object PageCutter {
  /** Where a file being written stands: taking batches, ruined by a failed batch, or complete. */
  sealed trait FileState
  case object Open extends FileState
  case object Failed extends FileState
  case object Finished extends FileState
}
