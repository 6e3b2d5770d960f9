package sparklance.format.io

import java.io.{FilterOutputStream, OutputStream}
import java.util.concurrent.atomic.AtomicInteger

/** Local storage that counts the input files and output streams it opens and those closed since. */
final class TrackingStorage extends Storage {
  val opened = new AtomicInteger()
  val closed = new AtomicInteger()
  def open: Int = opened.get - closed.get

  def openInput(path: String): InputFile = {
    val in = LocalStorage.openInput(path)
    opened.incrementAndGet()
    new InputFile {
      def path: String = in.path
      def length: Long = in.length
      def read(position: Long, length: Int): Array[Byte] = in.read(position, length)
      def close(): Unit = { closed.incrementAndGet(); in.close() }
    }
  }

  def create(path: String): OutputStream = {
    val out = LocalStorage.create(path)
    opened.incrementAndGet()
    new FilterOutputStream(out) {
      override def write(b: Array[Byte], off: Int, len: Int): Unit = out.write(b, off, len)
      override def close(): Unit = { closed.incrementAndGet(); super.close() }
    }
  }

  def putIfAbsent(path: String, bytes: Array[Byte]): Boolean = LocalStorage.putIfAbsent(path, bytes)
  def overwrite(path: String, bytes: Array[Byte]): Unit = LocalStorage.overwrite(path, bytes)
  def exists(path: String): Boolean = LocalStorage.exists(path)
  def list(dir: String): Seq[FileEntry] = LocalStorage.list(dir)
  def listDirectories(dir: String): Seq[String] = LocalStorage.listDirectories(dir)
  def mkdirs(dir: String): Unit = LocalStorage.mkdirs(dir)
  def delete(path: String): Unit = LocalStorage.delete(path)
  def deleteRecursively(path: String): Unit = LocalStorage.deleteRecursively(path)
  def rename(from: String, to: String): Unit = LocalStorage.rename(from, to)
  def renamesAtomically(path: String): Boolean = true
}
