package sparklance.format.io

import java.io.{Closeable, OutputStream}
import sparklance.format.UnsupportedFeatureException

/**
 * A file listed in a directory, with when it was last written (milliseconds since the epoch):
 * cleanup tells files an unfinished write may still need from old debris by that time.
 */
final case class FileEntry(name: String, size: Long, modifiedMillis: Long)

/** Random-access reads of one immutable file. */
trait InputFile extends Closeable {
  def path: String
  def length: Long
  /** Reads exactly `length` bytes at `position`; fails if the file is shorter. */
  def read(position: Long, length: Int): Array[Byte]
  /**
   * Reads `target.remaining` bytes at `position` into `target` (which may be off-heap memory, an
   * Arrow buffer): where the file can, without a copy on the heap.
   */
  def readInto(position: Long, target: java.nio.ByteBuffer): Unit = target.put(read(position, target.remaining))
  /**
   * How many bytes a reader going through the file in order takes per read: large where each read
   * is a request (object stores), small where reads are cheap (local files), so that buffers stay
   * below the size the JVM's G1 collector allocates outside its young generation.
   */
  def readAheadBytes: Int = 8 << 20
  /**
   * Whether a read costs about the copy of its bytes (a local file), so that a reader may fetch a
   * few values at a time from the parts of pages holding them; false where each read is a request
   * with a round trip of its own (object stores, HDFS), and pages are better fetched whole.
   */
  def readsCheaply: Boolean = false
  /**
   * A hint that bytes `[position, position + length)` will be read soon, by a reader going on
   * through one of its streams (`stream`: a column). A file on an object store fetches them on a
   * background thread, so that the request's latency passes while the reader decodes what it
   * has, and a later prefetch for the same stream drops what an earlier one fetched. Reads give
   * the same bytes either way; other files ignore the hint.
   */
  def prefetch(stream: Int, position: Long, length: Int): Unit = ()
  /**
   * Whether the bytes under this path never change and the path never names other bytes (a data
   * file a Lance writer named with a fresh UUID): readers may keep what they decoded of it for
   * later readers of the path. Files opened by path alone may be rewritten, and are not.
   */
  def writtenOnce: Boolean = false
}

/**
 * Where a table's files live. Paths are absolute strings understood by the implementation.
 * Data files are written once under fresh names; only manifests need `putIfAbsent`, which must be
 * atomic: of two writers racing for one name, exactly one succeeds. [[LocalStorage]] implements it
 * here; the `hadoop` module adds HadoopStorage (HDFS, object stores), whose documentation says how
 * each store makes the put atomic, and `sparklance.hadoop.Storages.forPath` picks one for a location.
 */
trait Storage {
  def openInput(path: String): InputFile
  /**
   * Opens a file whose length the caller knows (from a listing, or a manifest's file size), read
   * in ranges: an object store then needs no request to ask for the length.
   */
  def openInput(path: String, length: Long): InputFile = openInput(path)
  /**
   * Opens an object outside the table that a row references by absolute URI (an external blob),
   * on the URI's own file system with this storage's settings. A URI this storage has no file
   * system for is refused naming it.
   */
  def openExternal(uri: String): InputFile = {
    if (Storage.scheme(uri).isEmpty)
      throw new UnsupportedFeatureException(s"External blob URI '$uri' is not absolute (it has no scheme)")
    openInput(uri)
  }
  /** Whether files here read cheaply ([[InputFile.readsCheaply]]): local files. */
  def readsCheaply: Boolean = false
  /**
   * Runs `work`, whose requests are to the store `path` is in, so that they may overlap the
   * caller's own: an object store runs it on a background thread, so that the latencies of both
   * pass side by side; where a request answers at once (local files), nothing is gained by that,
   * and the caller's thread runs it when it asks for the result.
   */
  def inBackground[T](path: String)(work: () => T): Background[T] = Background.later(work)
  /** Opens a new file for writing; its parent directories are created. */
  def create(path: String): OutputStream
  /** Writes `bytes` to `path` only if nothing exists there; returns false if it already existed. */
  def putIfAbsent(path: String, bytes: Array[Byte]): Boolean
  /** Writes or replaces a small file (hints only, never a source of truth). */
  def overwrite(path: String, bytes: Array[Byte]): Unit
  def exists(path: String): Boolean
  /** Files (not directories) directly inside `dir`; empty if `dir` does not exist. */
  def list(dir: String): Seq[FileEntry]
  /** Subdirectory names directly inside `dir`; empty if `dir` does not exist. */
  def listDirectories(dir: String): Seq[String]
  def mkdirs(dir: String): Unit
  def delete(path: String): Unit
  def deleteRecursively(path: String): Unit
  /** Moves a file or directory; fails if the target exists. */
  def rename(from: String, to: String): Unit
  /**
   * Whether [[rename]] of a directory under `path` is one atomic step. Object stores have no
   * directories: there a rename copies every file and then deletes it, and a failure half way
   * leaves both halves; callers do something else.
   */
  def renamesAtomically(path: String): Boolean

  final def readAll(path: String): Array[Byte] = whole(openInput(path))

  /** [[readAll]] of a file whose length a listing gave. */
  final def readAll(path: String, length: Long): Array[Byte] = whole(openInput(path, length))

  private def whole(in: InputFile): Array[Byte] =
    try in.read(0, Math.toIntExact(in.length)) finally in.close()
}

object Storage {
  def join(base: String, child: String): String =
    if (base.endsWith("/")) base + child else base + "/" + child

  private val SchemePrefix = "^([a-zA-Z][a-zA-Z0-9+.-]*):".r

  /** The URI scheme of `path`, lower case; None for a plain path (a one-letter "scheme" is a Windows drive). */
  def scheme(path: String): Option[String] =
    SchemePrefix.findPrefixMatchOf(path).map(_.group(1).toLowerCase(java.util.Locale.ROOT)).filter(_.length > 1)
}
