package sparklance.format.io

import java.util.concurrent.{ExecutionException, Future, FutureTask}

/**
 * Work that [[Storage.inBackground]] started: `result` waits for it and gives its value, or
 * throws what it threw (the exception itself, not a wrapper, so that callers catch the types they know).
 */
final class Background[T] private (future: Future[T]) {
  def isDone: Boolean = future.isDone
  def result: T = try future.get() catch { case e: ExecutionException if e.getCause != null => throw e.getCause }
}

object Background {
  /** `work`, done on the caller's thread before this returns. */
  def now[T](work: () => T): Background[T] = {
    val task = new FutureTask[T](() => work())
    task.run()
    new Background(task)
  }

  /** Work under way as `future`. */
  def of[T](future: Future[T]): Background[T] = new Background(future)
}
