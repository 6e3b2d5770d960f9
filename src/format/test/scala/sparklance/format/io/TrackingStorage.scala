package sparklance.format.io

import java.io.{FilterOutputStream, OutputStream}
import java.util.concurrent.atomic.AtomicInteger

/** Local storage that counts the input files and output streams it opens and those closed since. */
final class TrackingStorage extends ForwardingStorage(LocalStorage) {
  val opened = new AtomicInteger()
  val closed = new AtomicInteger()
  def open: Int = opened.get - closed.get

  // Every read goes through here, also reads of a known length (which LocalStorage opens alike).
  override def openInput(path: String, length: Long): InputFile = openInput(path)

  override def openInput(path: String): InputFile = {
    val in = LocalStorage.openInput(path)
    opened.incrementAndGet()
    new InputFile {
      def path: String = in.path
      def length: Long = in.length
      def read(position: Long, length: Int): Array[Byte] = in.read(position, length)
      def close(): Unit = { closed.incrementAndGet(); in.close() }
    }
  }

  override def create(path: String): OutputStream = {
    val out = LocalStorage.create(path)
    opened.incrementAndGet()
    new FilterOutputStream(out) {
      override def write(b: Array[Byte], off: Int, len: Int): Unit = out.write(b, off, len)
      override def close(): Unit = { closed.incrementAndGet(); super.close() }
    }
  }
}
