package sparklance.format.io

import java.io.OutputStream

/** Storage that does what `to` does: tests override the calls they watch, fail or run a hook before. */
class ForwardingStorage(to: Storage = LocalStorage) extends Storage {
  def openInput(path: String): InputFile = to.openInput(path)
  override def openInput(path: String, length: Long): InputFile = to.openInput(path, length)
  override def openExternal(uri: String): InputFile = to.openExternal(uri)
  override def inBackground[T](path: String)(work: () => T): Background[T] = to.inBackground(path)(work)
  def create(path: String): OutputStream = to.create(path)
  def putIfAbsent(path: String, bytes: Array[Byte]): Boolean = to.putIfAbsent(path, bytes)
  def overwrite(path: String, bytes: Array[Byte]): Unit = to.overwrite(path, bytes)
  def exists(path: String): Boolean = to.exists(path)
  def list(dir: String): Seq[FileEntry] = to.list(dir)
  def listDirectories(dir: String): Seq[String] = to.listDirectories(dir)
  def mkdirs(dir: String): Unit = to.mkdirs(dir)
  def delete(path: String): Unit = to.delete(path)
  def deleteRecursively(path: String): Unit = to.deleteRecursively(path)
  def rename(from: String, to: String): Unit = this.to.rename(from, to)
  def renamesAtomically(path: String): Boolean = to.renamesAtomically(path)
}

object ForwardingStorage {
  /** `work` started at once on a thread of its own: background work as an object store's storage runs it. */
  def onOwnThread[T](work: () => T): Background[T] =
    Background.started[T] { c => val task = new java.util.concurrent.FutureTask[T](c); new Thread(task).start(); task }(work)
}
