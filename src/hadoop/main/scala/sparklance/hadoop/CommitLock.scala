package sparklance.hadoop

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.locks.ReentrantLock
import sparklance.format.LanceException

/**
 * An external lock that makes put-if-absent safe on a store that cannot create a file atomically
 * (no rename-if-absent, no conditional PUT). Every writer of a table must use the same lock: a
 * writer that skips it can still overwrite a manifest. Implementations are typically backed by a
 * database row or a DynamoDB item keyed by the path; [[JvmCommitLock]] only excludes writers in one
 * JVM (one Spark driver) and is the opt-in for a single writing application.
 *
 * Configure with `sparklance.storage.commitLock.class`: `jvm`, the name of a Scala object, or a
 * class with a public no-argument constructor.
 */
trait CommitLock {
  /** Runs `body` while holding the lock for `path`, excluding every other holder of a lock for `path`. */
  def withLock[T](path: String)(body: => T): T
}

/** Excludes concurrent committers of one path within this JVM only. */
object JvmCommitLock extends CommitLock {
  private val locks = new ConcurrentHashMap[String, ReentrantLock]()

  def withLock[T](path: String)(body: => T): T = {
    val lock = locks.computeIfAbsent(path, _ => new ReentrantLock())
    lock.lock()
    try body finally lock.unlock()
  }
}

object CommitLock {
  /** Configuration key naming the lock implementation. */
  val ClassKey = "sparklance.storage.commitLock.class"

  /** The lock named by `name` (see [[ClassKey]]). */
  def load(name: String): CommitLock = name.trim match {
    case "jvm" | "JvmCommitLock" => JvmCommitLock
    case className =>
      val cls = try Class.forName(className, true, Option(Thread.currentThread().getContextClassLoader)
        .getOrElse(getClass.getClassLoader))
      catch { case e: ClassNotFoundException => throw new LanceException(s"$ClassKey names $className, which is not on the classpath", e) }
      val instance =
        try cls.getField("MODULE$").get(null)
        catch { case _: NoSuchFieldException =>
          try cls.getConstructor().newInstance()
          catch { case e: ReflectiveOperationException =>
            throw new LanceException(s"$ClassKey names $className, which is neither a Scala object nor has a public no-argument constructor", e)
          }
        }
      instance match {
        case l: CommitLock => l
        case other => throw new LanceException(s"$ClassKey names $className, which does not implement ${classOf[CommitLock].getName}")
      }
  }
}
