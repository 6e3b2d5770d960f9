package sparklance.format.file

import com.google.protobuf.InvalidProtocolBufferException
import java.io.EOFException
import java.nio.{ByteBuffer, ByteOrder}
import sparklance.format.CorruptFileException
import sparklance.format.io.{DecodedFileCache, InputFile}
import sparklance.format.proto.File2Protos.ColumnMetadata

/**
 * The container of a Lance v2 file: footer, global buffers and column metadata. The constructor
 * reads the file's tail once (and at most one more range if the metadata is larger than that);
 * page bytes are read on demand through `read`, which checks every range against the file.
 */
final class ContainerReader(input: InputFile) {
  val path: String = input.path
  val fileLength: Long = input.length

  if (fileLength < Footer.Size)
    throw new CorruptFileException(path, s"file is $fileLength bytes, too short for the 40-byte Lance footer")

  /** Everything from here to the footer is data; metadata and page buffers must end before it. */
  private val dataEnd = fileLength - Footer.Size

  // A file written once has its metadata kept by the first reader (see the end), for later readers of the path.
  private val keptAs = if (input.writtenOnce) Some(s"$path|metadata|$fileLength") else None
  private val kept = keptAs.flatMap(DecodedFileCache.find[ContainerReader.Metadata])
  private var tailStart = kept.fold(fileLength - math.min(fileLength, ContainerReader.TailBytes))(_.start)
  private var tail = kept.fold(input.read(tailStart, (fileLength - tailStart).toInt))(_.bytes)

  val footer: Footer = Footer.parse(tail, tail.length - Footer.Size, path)

  private def table(position: Long, entries: Int, what: String): IndexedSeq[(Long, Long)] = {
    val bytes = ByteBuffer.wrap(read(position, 16L * entries, s"the $what offset table")).order(ByteOrder.LITTLE_ENDIAN)
    IndexedSeq.tabulate(entries) { i =>
      val (p, l) = (bytes.getLong, bytes.getLong)
      checkRange(p, l, s"$what $i")
      (p, l)
    }
  }

  private val (globalEntries, metaStart) = {
    val positions = Seq(footer.columnMetaStart, footer.columnMetaOffsetsPosition, footer.globalBufferOffsetsPosition)
    positions.foreach(p => checkRange(p, 0, "a footer position"))
    val entries = table(footer.globalBufferOffsetsPosition, footer.numGlobalBuffers, "global buffer")
    // One more read brings in all metadata (FileDescriptor included) when the tail missed some.
    val metaStart = (positions ++ entries.filter(_._2 > 0).map(_._1)).min
    if (metaStart < tailStart) {
      tail = input.read(metaStart, Math.toIntExact(tailStart - metaStart)) ++ tail
      tailStart = metaStart
    }
    (entries, metaStart)
  }

  val columns: IndexedSeq[ColumnMetadata] =
    table(footer.columnMetaOffsetsPosition, footer.numColumns, "column metadata").zipWithIndex.map { case ((p, l), i) =>
      try ColumnMetadata.parseFrom(read(p, l, s"column metadata $i"))
      catch { case e: InvalidProtocolBufferException => throw new CorruptFileException(path, s"column metadata $i is malformed", e) }
    }

  // Only the metadata is kept, not the pages' bytes the tail held: a scan of a table of 10,000
  // files keeps kilobytes a file, and a reader of a kept file reads its pages from the file.
  if (kept.isEmpty) keptAs.foreach { key =>
    val from = (metaStart - tailStart).toInt
    DecodedFileCache.get(key, (m: ContainerReader.Metadata) => m.bytes.length.toLong)(
      ContainerReader.Metadata(metaStart, java.util.Arrays.copyOfRange(tail, from, tail.length)))
  }

  def numGlobalBuffers: Int = globalEntries.size

  def globalBuffer(i: Int): Array[Byte] = {
    if (i >= globalEntries.size) throw new CorruptFileException(path, s"global buffer $i is missing (the file has ${globalEntries.size})")
    val (p, l) = globalEntries(i)
    read(p, l, s"global buffer $i")
  }

  /** Fails unless `[position, position + length)` lies in the data part of the file. */
  def checkRange(position: Long, length: Long, what: => String): Unit =
    if (position < 0 || length < 0 || position > dataEnd || length > dataEnd - position)
      throw new CorruptFileException(path,
        s"$what at offset $position with $length bytes lies outside the file's $dataEnd data bytes")

  def readAheadBytes: Int = input.readAheadBytes

  /**
   * See [[InputFile.prefetch]]; bytes of the tail, held already, are not fetched again. A range
   * running into the tail (the last page of the last column, mostly) is fetched up to it.
   */
  def prefetch(stream: Int, position: Long, length: Int): Unit = {
    checkRange(position, length, s"bytes prefetched for stream $stream")
    if (position < tailStart) input.prefetch(stream, position, math.min(length.toLong, tailStart - position).toInt)
  }

  /** How many of `length` bytes at `position` lie before the tail, and are read from the file. */
  private def beforeTail(position: Long, length: Long): Long = math.max(0L, math.min(length, tailStart - position))

  /** Reads `target.remaining` bytes at `position` into `target` (see [[InputFile.readInto]]). */
  def readInto(position: Long, target: java.nio.ByteBuffer, what: => String): Unit = {
    checkRange(position, target.remaining, what)
    // The part before the tail comes from the file (as the part fetched ahead, where it was), the rest from the tail.
    val fromFile = beforeTail(position, target.remaining).toInt
    if (fromFile > 0) {
      val limit = target.limit
      target.limit(target.position + fromFile)
      try input.readInto(position, target)
      catch { case e: EOFException => throw new CorruptFileException(path, s"$what: file ended early", e) }
      finally target.limit(limit)
    }
    if (target.hasRemaining) target.put(tail, (position + fromFile - tailStart).toInt, target.remaining)
  }

  def read(position: Long, length: Long, what: => String): Array[Byte] = {
    checkRange(position, length, what)
    if (length > Int.MaxValue - 16) throw new CorruptFileException(path, s"$what is $length bytes, more than one read can hold")
    if (position >= tailStart) {
      val from = (position - tailStart).toInt
      java.util.Arrays.copyOfRange(tail, from, from + length.toInt)
    } else if (beforeTail(position, length) == length) {
      try input.read(position, length.toInt)
      catch { case e: EOFException => throw new CorruptFileException(path, s"$what: file ended early", e) }
    } else {
      val bytes = new Array[Byte](length.toInt)
      readInto(position, ByteBuffer.wrap(bytes), what)
      bytes
    }
  }
}

object ContainerReader {
  /** A file's bytes from `start` (its metadata's first byte) to its end. */
  private final case class Metadata(start: Long, bytes: Array[Byte])

  /** The bytes read at once from a file's end: its footer and, mostly, all its metadata. */
  private[file] val TailBytes = 64L * 1024
}
