package sparklance.format.deletion

import java.io.ByteArrayOutputStream
import java.nio.channels.Channels
import java.util.concurrent.ThreadLocalRandom
import org.apache.arrow.compression.CommonsCompressionFactory
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.{UInt4Vector, VectorSchemaRoot}
import org.apache.arrow.vector.ipc.{ArrowFileReader, ArrowFileWriter}
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.apache.arrow.vector.util.ByteArrayReadableSeekableByteChannel
import org.roaringbitmap.RoaringBitmap
import scala.util.Using
import sparklance.format.{CorruptFileException, FileGoneException}
import sparklance.format.io.{DecodedFileCache, Storage}
import sparklance.format.table.BasePaths
import sparklance.format.proto.TableProtos.{DataFragment, DeletionFile}
import sparklance.format.proto.TableProtos.DeletionFile.DeletionFileType

/**
 * Lance deletion files: all deleted row offsets of one fragment at one version, as an Arrow IPC
 * file with one `row_id: uint32` column (.arrow, small sets) or a portable RoaringBitmap (.bin).
 */
object DeletionFiles {
  /** pylance switches from .arrow to .bin at about this many deleted rows. */
  val BitmapThreshold = 5000

  private val rowIdSchema = new Schema(java.util.List.of(
    new Field("row_id", FieldType.notNullable(new ArrowType.Int(32, false)), null)))

  def relativePath(fragmentId: Long, file: DeletionFile): String = {
    val ext = if (file.getFileType == DeletionFileType.BITMAP) "bin" else "arrow"
    s"_deletions/$fragmentId-${file.getReadVersion}-${java.lang.Long.toUnsignedString(file.getId)}.$ext"
  }

  /**
   * How many rows a fragment's deletion file deletes: the manifest's count, from metadata alone,
   * or, when the manifest says 0, the file's own. Older Lance writers leave the count 0 (unknown),
   * and a deletion file of no rows is never written, so 0 cannot mean "none".
   */
  def deletedRows(storage: Storage, files: BasePaths, fragment: DataFragment): Long =
    if (!fragment.hasDeletionFile) 0L
    else if (fragment.getDeletionFile.getNumDeletedRows != 0) fragment.getDeletionFile.getNumDeletedRows
    else read(storage, files, fragment).getLongCardinality

  /** The deleted offsets of a fragment (empty if it has no deletion file), found through the version's `files`. */
  def read(storage: Storage, files: BasePaths, fragment: DataFragment): RoaringBitmap = {
    if (!fragment.hasDeletionFile) return new RoaringBitmap()
    val file = fragment.getDeletionFile
    val path = files.deletionFile(fragment)
    // A deletion file is written once, under a name no other gets (a random id), so what the
    // process decoded of it is kept for the next scan of the fragment (on an object store, a HEAD
    // and a GET); every caller gets a copy of its own to change.
    DecodedFileCache.get(s"$path|deletions|${file.getNumDeletedRows}", (b: RoaringBitmap) => b.getLongSizeInBytes)(
      decode(storage, files, fragment, path)).clone()
  }

  private def decode(storage: Storage, files: BasePaths, fragment: DataFragment, path: String): RoaringBitmap = {
    val file = fragment.getDeletionFile
    val bytes = FileGoneException.guard(files.tablePath, relativePath(fragment.getId, file))(storage.readAll(path))
    val bitmap =
      try {
        if (file.getFileType == DeletionFileType.BITMAP) {
          PortableBitmaps.fromBytes(bytes)
        } else decodeArrow(bytes)
      } catch {
        case e: CorruptFileException => throw e
        case e: Exception => throw new CorruptFileException(path, s"unreadable deletion file: ${e.getMessage}", e)
      }
    if (file.getNumDeletedRows != 0 && bitmap.getLongCardinality != file.getNumDeletedRows)
      throw new CorruptFileException(path,
        s"holds ${bitmap.getLongCardinality} deleted rows, the manifest says ${file.getNumDeletedRows}")
    bitmap
  }

  private def decodeArrow(bytes: Array[Byte]): RoaringBitmap = {
    val result = new RoaringBitmap()
    Using.resource(new RootAllocator()) { allocator =>
      Using.resource(new ArrowFileReader(new ByteArrayReadableSeekableByteChannel(bytes), allocator,
          CommonsCompressionFactory.INSTANCE)) { reader =>
        while (reader.loadNextBatch()) {
          val root = reader.getVectorSchemaRoot
          root.getVector(0) match {
            case v: UInt4Vector => (0 until root.getRowCount).foreach(i => result.add(v.get(i)))
            case other => throw new IllegalStateException(s"row_id column has type ${other.getField.getType}")
          }
        }
      }
    }
    result
  }

  /**
   * Writes the complete deletion set of a fragment as a new file and returns its manifest entry.
   * The file name carries a random id, so concurrent writers never collide.
   */
  def write(storage: Storage, tablePath: String, fragmentId: Long, readVersion: Long, deleted: RoaringBitmap): DeletionFile = {
    val count = deleted.getLongCardinality
    val kind = if (count >= BitmapThreshold) DeletionFileType.BITMAP else DeletionFileType.ARROW_ARRAY
    val file = DeletionFile.newBuilder().setFileType(kind).setReadVersion(readVersion)
      .setId(ThreadLocalRandom.current().nextLong()).setNumDeletedRows(count).build()
    val bytes = if (kind == DeletionFileType.BITMAP) PortableBitmaps.toBytes(deleted) else encodeArrow(deleted)
    Using.resource(storage.create(Storage.join(tablePath, relativePath(fragmentId, file))))(_.write(bytes))
    file
  }

  private def encodeArrow(deleted: RoaringBitmap): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    Using.resource(new RootAllocator()) { allocator =>
      Using.resource(VectorSchemaRoot.create(rowIdSchema, allocator)) { root =>
        val v = root.getVector(0).asInstanceOf[UInt4Vector]
        val n = deleted.getCardinality
        v.allocateNew(n)
        var i = 0
        deleted.forEach((offset: Int) => { v.set(i, offset); i += 1 })
        root.setRowCount(n)
        Using.resource(new ArrowFileWriter(root, null, Channels.newChannel(out))) { w =>
          w.start(); w.writeBatch(); w.end()
        }
      }
    }
    out.toByteArray
  }
}
