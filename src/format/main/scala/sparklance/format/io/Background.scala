package sparklance.format.io

import java.util.concurrent.{ExecutionException, Future, FutureTask}

/**
 * Work [[Storage.inBackground]] was given, under way or to be done: `result` waits for it (or does
 * it) and gives its value, or throws what it threw (the exception itself, not a wrapper, so that
 * callers catch the types they know).
 */
final class Background[T] private (future: Future[T], runFirst: Option[FutureTask[T]] = None) {
  def isDone: Boolean = future.isDone
  def result: T = {
    runFirst.foreach(_.run()) // at most once: a task run or cancelled before is left as it is
    try future.get() catch { case e: ExecutionException if e.getCause != null => throw e.getCause }
  }

  /**
   * Calls the work off where it has not started: whether it never will (else it runs or ran to its
   * end, and its result, if any, is the caller's to release).
   */
  def cancel(): Boolean = future.cancel(false)
}

object Background {
  /** `work`, done on the thread that first asks for its result, when it does. */
  def later[T](work: () => T): Background[T] = {
    val task = new FutureTask[T](() => work())
    new Background(task, Some(task))
  }

  /** Work under way as `future`. */
  def of[T](future: Future[T]): Background[T] = new Background(future)
}
