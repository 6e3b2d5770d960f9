package sparklance.format.file.v2_0

import java.io.OutputStream
import org.apache.arrow.vector.FieldVector
import sparklance.format.file.{ContainerWriter, PageCutter}
import sparklance.format.table.LanceSchema

/**
 * Writes one Lance 2.0 data file (footer version 0.3) with the encodings pylance writes
 * (LANCE-FILE-2.0.md §5.1). `schema` = the top-level fields to write, with table field ids.
 *
 * Each top-level field collects rows until their Arrow size would pass `maxPageBytes`; then every
 * column of that field gets a page. Rows are never split, so one huge row makes a page alone.
 */
final class FileWriter20(out: OutputStream, schema: LanceSchema, maxPageBytes: Long = 8L << 20) {

  private val container = new ContainerWriter(out)
  private val encoders = schema.fields.map(FieldEncoder(_)).toIndexedSeq
  private val pages = new PageCutter(schema, maxPageBytes,
    (i, v, start, count) => encoders(i).append(v, start, count), i => encoders(i).flushPage(container))

  /**
   * Appends rows: `vectors` are in schema.fields order, all with the same value count (may be 0).
   * The vectors are copied, so the caller keeps ownership of them.
   */
  def write(vectors: Seq[FieldVector]): Unit = pages.write(vectors)

  /** Finishes the file and closes `out`. */
  def finish(): FileWriter20.Result = {
    try {
      val descriptor = pages.finish(everyField = false)
      encoders.foreach(_.finish(container))
      val columns = encoders.flatMap(_.columns)
      val size = container.finish(Seq(descriptor), columns.map(_.metadata), 0, 3)
      FileWriter20.Result(pages.rowCount, size, schema.allFields.map(_.id), columns.indices)
    } finally out.close()
  }
}

object FileWriter20 {
  /**
   * `fieldIds`/`columnIndices` are what the manifest's DataFile records for a 2.0 file: every
   * field id in pre-order, parents included, and the column indices 0..n-1 (§3.2).
   */
  final case class Result(numRows: Long, sizeBytes: Long, fieldIds: Seq[Int], columnIndices: Seq[Int])
}
