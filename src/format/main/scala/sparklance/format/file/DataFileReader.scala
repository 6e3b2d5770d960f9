package sparklance.format.file

import java.io.Closeable
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.FieldVector
import org.roaringbitmap.RoaringBitmap
import sparklance.format.{Resources, UnsupportedFeatureException}
import sparklance.format.file.v1.FileReaderV1
import sparklance.format.file.v2_0.FileReader20
import sparklance.format.file.v2_1.FileReader21
import sparklance.format.io.InputFile
import sparklance.format.table.{LanceField, LanceSchema}

/** A .lance data file of any supported version, read column by column over row ranges. */
trait DataFileReader extends Closeable {
  def numRows: Long
  def schema: LanceSchema
  def numColumns: Int
  /**
   * Rows [rowStart, rowStart + numRows) of the table field `field` (possibly a struct keeping only
   * some children) as a new vector owned by the caller; `columnOf` maps field ids to file columns.
   */
  final def read(field: LanceField, columnOf: Int => Int, rowStart: Long, numRows: Int, allocator: BufferAllocator): FieldVector =
    read(field, columnOf, rowStart, numRows, allocator, Long.MaxValue)

  /**
   * The first of rows [rowStart, rowStart + numRows) of `field` whose values decode to at most
   * `maxBytes` of Arrow memory (as [[RowBytes]] counts), one row at least: the vector holds fewer
   * than `numRows` rows when more would not fit. Rows are counted as pages are decoded, so that
   * values stored in a few bytes each (compressed, or repeated) are never decoded past the budget
   * (a list field of file format 2.0 is read whole).
   */
  def read(field: LanceField, columnOf: Int => Int, rowStart: Long, numRows: Int, allocator: BufferAllocator,
      maxBytes: Long): FieldVector

  /**
   * Rows `rows` (ascending, distinct) of the table field `field` as one new vector owned by the
   * caller: scattered rows (those left by deletions, or named one by one); with `maxBytes`, only
   * the first of them that fit it, as [[read]] counts. By default read over ranges of nearby rows
   * and copied out; a reader that can pick values inside pages does so.
   */
  def readRows(field: LanceField, columnOf: Int => Int, rows: Array[Long], allocator: BufferAllocator,
      maxBytes: Long = Long.MaxValue): FieldVector =
    RangeReads.rows(rows, allocator, maxBytes)((start, n, left) => read(field, columnOf, start, n, allocator, left))

  /**
   * The descriptors of rows [rowStart, rowStart + numRows) of the top-level blob field `field`
   * (`field.blobEncoding` is defined), whose column is `column`: where the rows' bytes are.
   */
  def blobDescriptors(field: LanceField, column: Int, rowStart: Long, numRows: Int): BlobDescriptors

  /**
   * Tells the reader that a scan reads `columns` (file column, field name) at `rows` only, scattered
   * runs (data skipping kept them, or they were named one by one), so that it reads and decodes
   * only the parts of pages holding them where the format allows, rather than whole pages. A
   * reader that fetches pages ahead ([[sparklance.format.io.InputFile.prefetch]]) fetches those of
   * which `rows` are a large part, each column's first now and each next when the scan reaches the
   * one before. A hint, given before the first read: results are the same either way.
   */
  def readSparsely(columns: Seq[(Int, String)], rows: RoaringBitmap): Unit = ()

  /**
   * Tells the reader that a scan will read `columns` (file column, field name) over rows `[from,
   * until)`, in order. A reader that fetches pages ahead ([[sparklance.format.io.InputFile.prefetch]])
   * fetches the page of each column holding row `from` now, all at once, and each next page when
   * the scan reaches the one before, none starting at `until` or later; without this, nothing is
   * fetched ahead. A hint: results are the same either way.
   */
  def willRead(columns: Seq[(Int, String)], from: Long, until: Long): Unit = ()

  /**
   * Global buffer `i` of a v2 file (0 is the FileDescriptor; index files keep payloads such as an
   * IVF model or a PQ codebook in the others, named by number in the schema metadata).
   */
  def globalBuffer(i: Int): Array[Byte] =
    throw new UnsupportedFeatureException(s"${getClass.getSimpleName} files have no global buffers")
}

object DataFileReader {
  /**
   * The reader for a file whose version only its footer tells (an index file); it owns `input`.
   * The footer comes with the rest of the file's tail, which the reader then reads from memory: one
   * read (a GET on an object store) where there were two.
   */
  def open(input: InputFile): DataFileReader = {
    val (tailStart, tail, footer) = Resources.closeOnFailure(Seq(input)) {
      if (input.length < Footer.Size) throw new sparklance.format.CorruptFileException(input.path, s"${input.length} bytes, shorter than a footer")
      val tailStart = input.length - math.min(input.length, ContainerReader.TailBytes)
      val tail = input.read(tailStart, (input.length - tailStart).toInt)
      (tailStart, tail, Footer.parse(tail, tail.length - Footer.Size, input.path))
    }
    open(new TailReadInput(input, tailStart, tail), footer.majorVersion, footer.minorVersion)
  }

  /** `input`, whose bytes from `tailStart` on are `tail`, already read: reads within them copy them. */
  private final class TailReadInput(input: InputFile, tailStart: Long, tail: Array[Byte]) extends InputFile {
    def path: String = input.path
    def length: Long = input.length
    override def readAheadBytes: Int = input.readAheadBytes
    override def readsCheaply: Boolean = input.readsCheaply
    override def writtenOnce: Boolean = input.writtenOnce
    override def prefetch(stream: Int, position: Long, n: Int): Unit = if (!inTail(position, n)) input.prefetch(stream, position, n)
    private def inTail(position: Long, n: Int): Boolean = position >= tailStart && position + n <= length
    def read(position: Long, n: Int): Array[Byte] =
      if (inTail(position, n)) java.util.Arrays.copyOfRange(tail, (position - tailStart).toInt, (position - tailStart).toInt + n)
      else input.read(position, n)
    override def readInto(position: Long, target: java.nio.ByteBuffer): Unit =
      if (inTail(position, target.remaining)) target.put(tail, (position - tailStart).toInt, target.remaining)
      else input.readInto(position, target)
    def close(): Unit = input.close()
  }

  /**
   * Whether the reader of data files of format `major.minor` picks scattered rows out of pages:
   * 2.1 and 2.2; 2.0 out of the parts of pages stored plainly, where files read cheaply
   * ([[sparklance.format.io.InputFile.readsCheaply]]). The legacy reader reads ranges around them,
   * and so does the 2.0 reader on object stores.
   */
  def picksRows(major: Int, minor: Int, readsCheaply: Boolean): Boolean = (major, minor) match {
    case (2, 0) => readsCheaply
    case (2, 1) | (2, 2) => true
    case _ => false
  }

  /**
   * The reader for a data file whose manifest entry says file format `major.minor`; it owns
   * `input`, which is closed if no reader can be made (unsupported version, corrupt footer).
   */
  def open(input: InputFile, major: Int, minor: Int): DataFileReader = Resources.closeOnFailure(Seq(input)) {
    (major, minor) match {
      case (0, 1) | (0, 2) => new FileReaderV1(input)
      case (2, 0) | (0, 3) => new FileReader20(input)
      case (2, 1) | (2, 2) => new FileReader21(input)
      case _ => throw new UnsupportedFeatureException(
        s"Data file ${input.path} uses Lance file format $major.$minor; sparklance reads legacy (V1: 0.1, 0.2), 2.0, 2.1 and 2.2")
    }
  }
}
