package sparklance.format.io

import java.io.{EOFException, OutputStream}
import java.nio.ByteBuffer
import java.nio.channels.FileChannel
import java.nio.file._
import java.util.Comparator
import scala.jdk.CollectionConverters._
import scala.util.Using

/** Storage on a local (or locally mounted) file system. Paths may be plain or `file:` URIs. */
object LocalStorage extends Storage {
  private def p(path: String): Path =
    if (path.startsWith("file:")) Paths.get(java.net.URI.create(path)) else Paths.get(path)

  private final class LocalInputFile(val path: String) extends InputFile {
    private val channel = FileChannel.open(p(path), StandardOpenOption.READ)
    val length: Long = channel.size()
    override def readAheadBytes: Int = 256 << 10
    override def readsCheaply: Boolean = true
    def read(position: Long, len: Int): Array[Byte] = {
      val buf = ByteBuffer.allocate(len)
      readInto(position, buf)
      buf.array()
    }
    override def readInto(position: Long, target: ByteBuffer): Unit = {
      val len = target.remaining
      var pos = position
      while (target.hasRemaining) {
        val n = channel.read(target, pos)
        if (n < 0) throw new EOFException(s"$path: wanted $len bytes at $position, file has $length")
        pos += n
      }
    }
    def close(): Unit = channel.close()
  }

  def openInput(path: String): InputFile = new LocalInputFile(path)

  override def readsCheaply: Boolean = true

  // Only the local file system is reachable here; other stores go through the hadoop module.
  override def openExternal(uri: String): InputFile = Storage.scheme(uri) match {
    case Some("file") => openInput(uri)
    case _ => throw new sparklance.format.UnsupportedFeatureException(
      s"External blob URI '$uri' is not on the local file system, the only one this storage reaches")
  }

  def create(path: String): OutputStream = {
    val target = p(path)
    Files.createDirectories(target.getParent)
    Files.newOutputStream(target, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)
  }

  def putIfAbsent(path: String, bytes: Array[Byte]): Boolean = {
    val target = p(path)
    Files.createDirectories(target.getParent)
    // Write a private temporary file, then link it to the final name: link creation fails
    // atomically if the name exists, so a reader never sees a half-written manifest.
    val tmp = Files.createTempFile(target.getParent, ".tmp-", ".partial")
    try {
      Files.write(tmp, bytes)
      try { Files.createLink(target, tmp); true }
      catch {
        case _: FileAlreadyExistsException => false
        case _: UnsupportedOperationException =>
          try { Files.move(tmp, target); true } catch { case _: FileAlreadyExistsException => false }
      }
    } finally Files.deleteIfExists(tmp)
  }

  def overwrite(path: String, bytes: Array[Byte]): Unit = {
    val target = p(path)
    Files.createDirectories(target.getParent)
    val tmp = Files.createTempFile(target.getParent, ".tmp-", ".partial")
    Files.write(tmp, bytes)
    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE)
  }

  def exists(path: String): Boolean = Files.exists(p(path))

  private def children(dir: String): Seq[Path] = {
    val d = p(dir)
    if (!Files.isDirectory(d)) Seq.empty
    else Using.resource(Files.list(d))(_.iterator().asScala.toVector)
  }

  // Concurrent writers remove their temporary files at any time: an entry that vanishes between
  // the listing and reading its attributes is simply not there.
  def list(dir: String): Seq[FileEntry] =
    children(dir).flatMap { f =>
      try {
        val attrs = Files.readAttributes(f, classOf[java.nio.file.attribute.BasicFileAttributes])
        if (attrs.isRegularFile) Some(FileEntry(f.getFileName.toString, attrs.size(), attrs.lastModifiedTime().toMillis)) else None
      } catch { case _: NoSuchFileException => None }
    }

  def listDirectories(dir: String): Seq[String] =
    children(dir).filter(Files.isDirectory(_)).map(_.getFileName.toString)

  def mkdirs(dir: String): Unit = Files.createDirectories(p(dir))

  def delete(path: String): Unit = Files.deleteIfExists(p(path))

  def renamesAtomically(path: String): Boolean = true

  def rename(from: String, to: String): Unit = {
    Files.createDirectories(p(to).getParent)
    Files.move(p(from), p(to), StandardCopyOption.ATOMIC_MOVE)
  }

  def deleteRecursively(path: String): Unit = {
    val root = p(path)
    if (Files.exists(root))
      Using.resource(Files.walk(root))(_.sorted(Comparator.reverseOrder[Path]()).iterator().asScala.foreach(Files.delete))
  }
}
