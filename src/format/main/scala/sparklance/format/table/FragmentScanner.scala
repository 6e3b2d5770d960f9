package sparklance.format.table

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.{FieldVector, LargeVarBinaryVector}
import org.apache.arrow.vector.types.pojo.ArrowType
import org.roaringbitmap.RoaringBitmap
import scala.jdk.CollectionConverters._
import scala.collection.mutable.ArrayBuffer
import sparklance.format.{FileGoneException, Primitives, Resources, UnsupportedFeatureException}
import sparklance.format.deletion.DeletionFiles
import sparklance.format.file.v2_1.PackedStructs
import sparklance.format.file.{BlobDescriptors, BlobLocation, BlobSidecars, DataFileReader, RangeReads, RowBytes, RowSelection}
import sparklance.format.io.{Background, InputFile, Storage}
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}

/**
 * Live rows of one fragment, in batches. `offsets(i)` is the physical row offset of row i in
 * the fragment (unsigned: 2^31 and more are negative Ints), from which [[RowAddress.of]] makes
 * the row address.
 */
final class ScanBatch private (val vectors: Seq[FieldVector], val numRows: Int, offsetsOf: () => Array[Int],
    runStart: Long) extends AutoCloseable {
  def this(vectors: Seq[FieldVector], offsets: Array[Int]) = this(vectors, offsets.length, () => offsets, -1L)
  /** Built on first use for a run of consecutive rows: most scans never ask (no metadata column read). */
  lazy val offsets: Array[Int] = offsetsOf()

  /** `offsets(i)`, without building `offsets` for a run: for readers that want the offsets of a few rows. */
  def offset(i: Int): Int = if (runStart >= 0) (runStart + i).toInt else offsets(i)

  /**
   * Calls `put(i, address)` with the row address ([[RowAddress.of]]) of every row i in fragment
   * `fragmentId`, in order; for a run of consecutive rows without building `offsets`.
   */
  def foreachAddress(fragmentId: Long)(put: ScanBatch.AddressSink): Unit = {
    val high = fragmentId << 32
    var i = 0
    if (runStart >= 0) while (i < numRows) { put.put(i, high | (runStart + i)); i += 1 }
    else {
      val at = offsets
      while (i < numRows) { put.put(i, high | Integer.toUnsignedLong(at(i))); i += 1 }
    }
  }

  def close(): Unit = Resources.closeAll(vectors)
}

object ScanBatch {
  /** The `n` consecutive physical rows from `from`. */
  def run(vectors: Seq[FieldVector], from: Long, n: Int): ScanBatch =
    new ScanBatch(vectors, n, () => Primitives.ints(n)(i => (from + i).toInt), from)

  /** The rows of `runs` counted from physical row `from`, whose offsets are built on first use. */
  def runs(vectors: Seq[FieldVector], from: Long, runs: RowSelection.Runs): ScanBatch =
    new ScanBatch(vectors, runs.rows, () => {
      val offsets = new Array[Int](runs.rows)
      var at = 0
      var r = 0
      while (r < runs.count) {
        var i = 0
        while (i < runs.lengths(r)) { offsets(at) = (from + runs.starts(r) + i).toInt; at += 1; i += 1 }
        r += 1
      }
      offsets
    }, -1L)

  /** Takes a row's address: an interface of primitives, so that no address is boxed. */
  trait AddressSink { def put(row: Int, address: Long): Unit }
}

/**
 * Reads the projected top-level `fields` of a fragment over physical rows [start, end), skipping
 * rows its deletion file marks and rows outside `within` (or all but the `only` rows). Only the data files holding a projected field are opened, and
 * fields absent from every data file (added later) read as nulls.
 *
 * A batch holds at most `batchRows` rows and about `batchBytes` of decoded data (Arrow memory, as
 * [[RowBytes]] counts it). How many rows a batch asks for is guessed, first from the stored bytes
 * per row of the files read, then from the decoded size of the batch before; the readers then
 * decode rows only while they fit `batchBytes`, counting what each page decodes to, so that values
 * stored in a few bytes (compressed, repeated) cut the batch short rather than decode in their
 * thousands. Rows of a megabyte come a few dozen at a time, and a single row larger than
 * `batchBytes` is a batch of its own.
 */
final class FragmentScanner(
    storage: Storage,
    files: BasePaths,
    fragment: DataFragment,
    fields: Seq[LanceField],
    allocator: BufferAllocator,
    start: Long,
    end: Long,
    batchRows: Int = 8192,
    only: Option[RoaringBitmap] = None,
    batchBytes: Long = FragmentScanner.DefaultBatchBytes,
    within: Option[RoaringBitmap] = None) extends Iterator[ScanBatch] with AutoCloseable {

  private def tablePath = files.tablePath

  // `only` names the rows to read, deleted or not (e.g. the rows a commit changed); `within` the
  // only rows that may be read (those data skipping kept, or a lookup named), less the deleted
  // ones: a lookup by row id or address must not find a deleted row. Every other row
  // is skipped as if deleted, so long unselected runs are never decoded.
  // On an object store the deletion file (a HEAD for its length, then a GET) is read while the
  // data files open (a GET of each one's tail): the task waits out their latencies side by side.
  private val deletionFile: Option[Background[RoaringBitmap]] =
    if (only.isDefined || !fragment.hasDeletionFile) None
    else Some(storage.inBackground(files.deletionFile(fragment))(() => DeletionFiles.read(storage, files, fragment)))

  // The split's rows named, or kept, for a scattered read: the same for each data file of the fragment.
  private lazy val scatteredRows: Option[RoaringBitmap] = only.orElse(within).map { rows =>
    val inSplit = RoaringBitmap.bitmapOfRange(start, end)
    inSplit.and(rows)
    inSplit
  }

  private lazy val deleted: RoaringBitmap = only match {
    case Some(rows) => RoaringBitmap.flip(rows, 0L, math.max(fragment.getPhysicalRows, end))
    case None =>
      val deletions = deletionFile.fold(new RoaringBitmap())(_.result)
      within.foreach(rows => deletions.or(RoaringBitmap.flip(rows, 0L, math.max(fragment.getPhysicalRows, end))))
      deletions
  }

  private case class Source(reader: DataFileReader, columnOf: Map[Int, Int], input: InputFile, file: DataFile)

  private val dataFiles = fragment.getFilesList.asScala.toSeq
  private var opened = Map.empty[String, Source]

  private def sourceFor(field: LanceField): Option[Source] = {
    // 2.1+ data files may list only leaf ids, so a nested field is found through its descendants,
    // its leaves first: a struct rewritten in place (pylance's update_columns, an in-place UPDATE)
    // gets a 2.1+ file of its leaves, while the fragment's 2.0 file goes on listing the struct's id.
    def lists(ids: Seq[Int]) = dataFiles.find(f => ids.exists(id => f.getFieldsList.contains(id)))
    lists(field.preOrder.filter(_.children.isEmpty).map(_.id)).orElse(lists(field.preOrder.map(_.id))).map { f =>
      opened.getOrElse(f.getPath, {
        val s = open(f); opened += f.getPath -> s; s
      })
    }
  }

  private val read = new java.util.concurrent.atomic.AtomicLong()

  /** Bytes read from the fragment's data files so far. */
  def bytesRead: Long = read.get

  private def open(f: DataFile): Source = {
    val path = files.dataFile(f)
    // Lance writers record the size (0 where unknown), which spares an object store a request.
    // Stores may open lazily: the footer's read is where a file a cleanup removed shows.
    val (input, reader) = FileGoneException.guard(tablePath, s"data/${f.getPath}") {
      // A data file's name is a fresh UUID: what is decoded of it may be kept for the next scan.
      val input = new Counted(if (f.getFileSizeBytes > 0) storage.openInput(path, f.getFileSizeBytes) else storage.openInput(path), writtenOnce = true)
      input -> DataFileReader.open(input, f.getFileMajorVersion, f.getFileMinorVersion)
    }
    // In 2.1+ files only leaves have columns; parents are listed with column index -1.
    val columnOf = f.getFieldsList.asScala.zip(f.getColumnIndicesList.asScala)
      .collect { case (id, c) if c.intValue >= 0 => id.intValue -> c.intValue }.toMap
    val columns = fields.flatMap(_.preOrder).flatMap(f => columnOf.get(f.id).map(_ -> f.name))
    scatteredRows match {
      // Rows named one by one, or data skipping kept, are scattered: read the parts of pages holding them.
      case Some(rows) => reader.readSparsely(columns, rows)
      case None =>
        // Pages are fetched from the first live row where the deletion file has been read already;
        // from the split's start where it is still on its way, rather than waiting for it.
        val firstLive =
          if (!deletionFile.forall(_.isDone)) start
          else { val live = deleted.nextAbsentValue(start.toInt); if (live < 0) end else math.min(end, live) }
        if (firstLive < end) reader.willRead(columns, firstLive, end)
    }
    Source(reader, columnOf, input, f)
  }

  /** `file`, with every byte read from it counted in `bytesRead`. */
  private final class Counted(file: InputFile, override val writtenOnce: Boolean) extends InputFile {
    def path: String = file.path
    def length: Long = file.length
    override def readAheadBytes: Int = file.readAheadBytes
    override def readsCheaply: Boolean = file.readsCheaply
    // Counted when read: bytes fetched ahead that the scan never reads are not its reads.
    override def prefetch(stream: Int, position: Long, length: Int): Unit = file.prefetch(stream, position, length)
    override def readInto(position: Long, target: java.nio.ByteBuffer): Unit = {
      FragmentScanner.this.read.addAndGet(target.remaining)
      file.readInto(position, target)
    }
    def read(position: Long, length: Int): Array[Byte] = { FragmentScanner.this.read.addAndGet(length); file.read(position, length) }
    def close(): Unit = file.close()
  }

  // Files blob values are in besides the data files (2.2 blob v2 sidecars, external objects), by
  // path or URI, opened as rows need them.
  private var blobFiles = Map.empty[String, InputFile]

  private def blobFile(path: String)(open: => InputFile): InputFile =
    blobFiles.getOrElse(path, { val f = new Counted(open, writtenOnce = false); blobFiles += path -> f; f })

  private lazy val blobFields = fields.zip(sources).collect { case (f, Some(src)) if f.blobEncoding.isDefined => f -> src }

  private def descriptors(field: LanceField, src: Source, from: Long, n: Int): BlobDescriptors =
    src.reader.blobDescriptors(field, src.columnOf.getOrElse(field.id,
      throw new UnsupportedFeatureException(s"Blob field '${field.name}' has no column in a data file of $tablePath")), from, n)

  /**
   * The values of a blob column as binary, fetched where the descriptors say: only the bytes of
   * the rows read, and only when the column is read at all.
   */
  private def blobValues(field: LanceField, src: Source, from: Long, n: Int): FieldVector = {
    val d = descriptors(field, src, from, n)
    val out = new LargeVarBinaryVector(field.name, allocator)
    Resources.closeOnFailure(Seq(out)) {
      out.allocateNew(math.max(d.totalBytes, 1L), math.max(n, 1))
      var i = 0
      while (i < n) {
        val row = from + i
        d.location(i, s"Row $row of blob field '${field.name}' in $tablePath") match {
          case None => out.setNull(i)
          case Some(location) => out.setSafe(i, blobBytes(field, src, row, location))
        }
        i += 1
      }
      out.setValueCount(n)
      out
    }
  }

  private def blobBytes(field: LanceField, src: Source, row: Long, location: BlobLocation): Array[Byte] = {
    def read(file: InputFile, position: Long, size: Long): Array[Byte] =
      if (size == 0) Array.emptyByteArray
      else if (size > Int.MaxValue - 16) throw new UnsupportedFeatureException(
        s"Row $row of blob field '${field.name}' in $tablePath holds $size bytes, more than one value can")
      else file.read(position, size.toInt)
    location match {
      case BlobLocation.Inline(position, size) => read(src.input, position, size)
      case BlobLocation.Packed(id, position, size) => read(sidecar(src.file, id), position, size)
      case BlobLocation.Dedicated(id, position, size) => read(sidecar(src.file, id), position, size)
      // Blob id 0: an absolute URI (external) or one under the table's root (managed); any other
      // blob id is a base path the manifest registers (feature flag 16), opened as the table's files are.
      case BlobLocation.External(uri, base, range) =>
        val file =
          if (base == 0) blobFile(uri)(storage.openExternal(uri))
          else { val path = files.blob(base, uri); blobFile(path)(storage.openInput(path)) }
        range.fold(read(file, 0, file.length))(r => read(file, r.position, r.size))
      case BlobLocation.Managed(uri, base, position, size) =>
        val path = if (base == 0) Storage.join(tablePath, uri) else files.blob(base, uri)
        read(blobFile(path)(storage.openInput(path)), position, size)
    }
  }

  /** A sidecar of `dataFile`: `data/<its name without .lance>/<blob id as 32 bits, lowest first>.blob`. */
  private def sidecar(dataFile: DataFile, blobId: Int): InputFile = {
    val path = Storage.join(files.dataDir(dataFile), s"${dataFile.getPath.stripSuffix(".lance")}/${BlobSidecars.fileName(blobId)}")
    blobFile(path)(storage.openInput(path))
  }

  /** At most `rows` rows from `from` whose blob bytes fit the batch (one row at least). */
  private def withinBlobBudget(from: Long, rows: Int): Int =
    if (blobFields.isEmpty || rows <= 1) rows
    else {
      val sizes = new Array[Long](rows)
      blobFields.foreach { case (f, src) =>
        val d = descriptors(f, src, from, rows)
        var i = 0
        while (i < rows) { if (d.valid(i)) sizes(i) += d.size(i); i += 1 }
      }
      var total = 0L
      var n = 0
      while (n < rows && (n == 0 || total + sizes(n) <= batchBytes)) { total += sizes(n); n += 1 }
      n
    }

  // A data file that fails to open closes the ones opened before it; so does a deletion file
  // that cannot be read, which fails the scanner here as it did before data files were opened.
  private val sources: Seq[Option[Source]] = Resources.closeOnFailure(opened.values.map(_.reader)) {
    val opening = fields.map(sourceFor)
    deleted
    opening
  }

  // A struct child added after the fragment was written (ADD COLUMN s.z) has no leaf in any of its
  // data files: the struct is read without it, and the child is added back as NULL.
  private val listedIds: Set[Int] = dataFiles.flatMap(_.getFieldsList.asScala.map(_.intValue)).toSet
  private def stored(f: LanceField): LanceField = f.arrowType match {
    case _: ArrowType.Struct if f.children.nonEmpty && !PackedStructs.isPacked(f) =>
      val kept = f.children.filter(_.preOrder.exists(n => n.children.isEmpty && listedIds(n.id)))
      if (kept.isEmpty) f else f.copy(children = kept.map(stored))
    case _ => f
  }
  private val readAs: Seq[LanceField] = fields.zip(sources).map { case (f, src) => if (src.isDefined) stored(f) else f }
  private var position = start

  // Rows per batch; before anything is decoded, what the stored bytes of the files read suggest.
  private var window: Int = rowsFor(
    if (fragment.getPhysicalRows <= 0) 0.0
    else dataFiles.filter(f => opened.contains(f.getPath)).map(_.getFileSizeBytes).sum.toDouble / fragment.getPhysicalRows)

  private def rowsFor(bytesPerRow: Double): Int =
    if (bytesPerRow <= 0) batchRows
    else math.max(1L, math.min(batchRows.toLong, (batchBytes / bytesPerRow).toLong)).toInt

  // Skip whole batches of deleted rows without decoding them.
  private def advancePastDeleted(): Unit =
    while (position < end && deleted.contains(position.toInt)) {
      val next = deleted.nextAbsentValue(position.toInt)
      position = if (next < 0) end else math.min(end, next.toLong)
    }

  def hasNext: Boolean = { advancePastDeleted(); position < end }

  /** The physical offset the next batch starts at or after. */
  def nextOffset: Long = position

  /** Moves on to physical row `offset` without decoding the rows before it. */
  def skipTo(offset: Long): Unit = if (offset > position) position = math.min(offset, end)

  def next(): ScanBatch = nextBelow(end)

  /** The next batch, of rows below physical offset `limit` only (there must be a live one). */
  def nextBelow(limit: Long): ScanBatch = {
    if (!hasNext || position >= limit) throw new NoSuchElementException
    val from = position
    // The window ends at its last live row: a short run of live rows before a long skipped one
    // (data skipping keeps zones here and there) is read alone, not as part of a whole window.
    val upTo = math.min(window.toLong, math.min(end, limit) - position)
    val lastLive = deleted.previousAbsentValue((from + upTo - 1).toInt)
    val rows = withinBlobBudget(from, (if (lastLive >= from) lastLive - from + 1 else upTo).toInt)
    // A long run of live rows is read as its own batch, with no copy; where short live runs mix
    // with deleted rows, the next live rows (a batch of them, however far apart) are picked.
    val nextDeleted = deleted.nextValue(from.toInt)
    val liveRun = if (nextDeleted < 0 || nextDeleted >= from + rows) rows else (nextDeleted - from).toInt
    val batch =
      if (liveRun == rows || liveRun >= rows / 4) {
        val read = readRows(from, liveRun)
        position += read.numRows
        read
      } else if (blobFields.isEmpty && 2L * (rows - deleted.rangeCardinality(from, from + rows)) >= rows) {
        // Most of the window is live (as after a DELETE or MERGE of a few rows): it is read as a
        // run and its live rows copied out in runs, which costs a plain scan and a copy, where
        // picking every live row alone took three times a plain scan's CPU.
        val read = readRows(from, rows)
        position += read.numRows
        liveOf(read, from)
      } else {
        // Blob rows are budgeted by bytes over the window; other rows by count only.
        val picked = pickRows(liveRows(from, if (blobFields.isEmpty) math.min(end, limit) else from + rows, window))
        position = Integer.toUnsignedLong(picked.offsets(picked.numRows - 1)) + 1
        picked
      }
    if (batch.numRows > 0) window = rowsFor(batch.vectors.map(v => RowBytes(v, 0, batch.numRows)).sum.toDouble / batch.numRows)
    batch
  }

  /**
   * Every projected field's first rows of `count` (one at least) that fit `batchBytes` together:
   * `read(field, source, rows, maxBytes)` reads a field's first `rows` (or fewer that fit
   * `maxBytes`); each field reads the rows the fields before it left, within what they left of the
   * budget (a fair share at least, so that one large field does not starve the others down to a
   * row), and fields that read more are cut to the rows all of them read.
   */
  private def readFields(count: Int)(read: (LanceField, Option[Source], Int, Long) => FieldVector): (Seq[FieldVector], Int) = {
    val vectors = ArrayBuffer.empty[FieldVector]
    Resources.closeOnFailure(vectors) {
      val share = batchBytes / math.max(1, fields.size)
      var rows = count
      var left = batchBytes
      fields.lazyZip(readAs).lazyZip(sources).foreach { case (field, part, src) =>
        val v = if (part eq field) read(field, src, rows, math.max(left, share))
          else NullVectors.completing(read(part, src, rows, math.max(left, share)), field, allocator)
        vectors += v
        rows = math.min(rows, v.getValueCount)
        left -= RowBytes(v, 0, rows)
      }
      vectors.foreach(v => if (v.getValueCount > rows) v.setValueCount(rows))
      (vectors.toSeq, rows)
    }
  }

  /** The rows from physical row `from` (live rows, `n` of them or fewer that fit the batch). */
  private def readRows(from: Long, n: Int): ScanBatch = {
    val (vectors, rows) = readFields(n) {
      case (field, Some(src), rows, _) if field.blobEncoding.isDefined => blobValues(field, src, from, rows)
      case (field, Some(src), rows, maxBytes) => src.reader.read(field, columnIn(src), from, rows, allocator, maxBytes)
      case (field, None, rows, _) => NullVectors.allNull(field, rows, allocator)
    }
    ScanBatch.run(vectors, from, rows)
  }

  /** Rows `rows` (ascending physical offsets, or the first of them that fit the batch), each field's picked by its reader. */
  private def pickRows(rows: Array[Long]): ScanBatch = {
    val (vectors, n) = readFields(rows.length) {
      case (field, Some(src), n, maxBytes) if field.blobEncoding.isDefined =>
        RangeReads.rows(rows.take(n), allocator, maxBytes)((start, k, _) => blobValues(field, src, start, k))
      case (field, Some(src), n, maxBytes) => src.reader.readRows(field, columnIn(src), rows.take(n), allocator, maxBytes)
      case (field, None, n, _) => NullVectors.allNull(field, n, allocator)
    }
    // A loop, not `map`: ArrayOps.map boxes each of the batch's offsets.
    val offsets = new Array[Int](n)
    var i = 0
    while (i < n) { offsets(i) = rows(i).toInt; i += 1 }
    new ScanBatch(vectors, offsets)
  }

  /** The live rows of `batch`, a run of rows from physical row `from`, copied out (`batch` is closed). */
  private def liveOf(batch: ScanBatch, from: Long): ScanBatch = {
    val runs = liveRuns(from, from + batch.numRows, batch.numRows)
    if (runs.rows == batch.numRows) batch
    else try {
      val copies = ArrayBuffer.empty[FieldVector]
      Resources.closeOnFailure(copies) { batch.vectors.foreach(v => copies += RowSelection.copy(v, runs, allocator)) }
      ScanBatch.runs(copies.toSeq, from, runs)
    } finally batch.close()
  }

  /**
   * The runs of live rows from physical row `from` below `bound`, as rows from `from`, holding
   * `maxRows` rows at most: two bitmap lookups a run (the next live row, the next deleted one).
   * Walking every deleted row was half a scan's time where most rows are deleted; looking up the
   * next live row at every row, a third where 1% are.
   */
  private def liveRuns(from: Long, bound: Long, maxRows: Int): RowSelection.Runs = {
    // A run at most after each deleted row, and one before the first.
    val most = math.max(1L, math.min(maxRows.toLong, deleted.rangeCardinality(from, bound) + 1)).toInt
    val starts = new Array[Int](most)
    val lengths = new Array[Int](most)
    var count = 0
    var rows = 0
    var at = from
    while (rows < maxRows && at < bound) {
      val runStart = deleted.nextAbsentValue(at.toInt)
      if (runStart < 0 || runStart >= bound) at = bound
      else {
        val nextGone = deleted.nextValue(runStart.toInt)
        val runEnd = math.min(if (nextGone < 0) bound else math.min(nextGone, bound), runStart + (maxRows - rows))
        starts(count) = (runStart - from).toInt
        lengths(count) = (runEnd - runStart).toInt
        rows += lengths(count)
        count += 1
        at = runEnd
      }
    }
    RowSelection.Runs.of(starts, lengths, count)
  }

  /** Up to `count` live rows from physical row `from` (live itself), below `bound`. */
  private def liveRows(from: Long, bound: Long, count: Int): Array[Long] = only match {
    case Some(rows) =>
      // Written into an array: ArrayBuilder's `+=` boxed every row (Growable is not specialized).
      val out = new Array[Long](math.max(0L, math.min(count.toLong, bound - from)).toInt)
      var n = 0
      val it = rows.getIntIterator
      it.advanceIfNeeded(from.toInt)
      while (n < out.length && it.hasNext && Integer.toUnsignedLong(it.peekNext) < bound) { out(n) = Integer.toUnsignedLong(it.next()); n += 1 }
      if (n == out.length) out else java.util.Arrays.copyOf(out, n)
    case None =>
      val runs = liveRuns(from, bound, count)
      val out = new Array[Long](runs.rows)
      var n = 0
      var r = 0
      while (r < runs.count) {
        var i = 0
        while (i < runs.lengths(r)) { out(n) = from + runs.starts(r) + i; n += 1; i += 1 }
        r += 1
      }
      out
  }

  private def columnIn(src: Source): Int => Int = id => src.columnOf.getOrElse(id,
    throw new UnsupportedFeatureException(s"Field id $id has no column in a data file of $tablePath"))

  def close(): Unit = Resources.closeAll(opened.values.map(_.reader) ++ blobFiles.values)
}

object FragmentScanner {
  /** Decoded bytes a batch aims at. */
  val DefaultBatchBytes: Long = 32L << 20
}
