package sparklance.format.io

import java.util.concurrent.{ExecutionException, Future, FutureTask}
import scala.util.control.NonFatal

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

  /**
   * The results of `works`, in order, once each has ended. Should one fail, the works not yet
   * started are called off, `release` gets the results of those that succeeded (files they wrote,
   * say), and the first failure, in order, is thrown: all of them or none.
   */
  def all[T](works: Seq[Background[T]])(release: T => Unit): Seq[T] = {
    var failure = Option.empty[Throwable]
    val done = works.flatMap { w =>
      if (failure.isDefined && w.cancel()) None
      else try Some(w.result) catch { case e: Throwable => failure = failure.orElse(Some(e)); None }
    }
    failure.foreach { e =>
      done.foreach(t => try release(t) catch { case NonFatal(r) => e.addSuppressed(r) })
      throw e
    }
    done
  }

  /** Work under way as `future`. */
  def of[T](future: Future[T]): Background[T] = new Background(future)
}
