package sparklance.format.io

import java.util.concurrent.{Callable, CancellationException, ExecutionException, Future, FutureTask}
import java.util.concurrent.atomic.AtomicBoolean
import scala.util.control.NonFatal

/**
 * Work [[Storage.inBackground]] was given, under way or to be done: `result` waits for it (or does
 * it) and gives its value, or throws what it threw (the exception itself, not a wrapper, so that
 * callers catch the types they know).
 *
 * @param claim set once the work starts or is called off, whichever comes first (None: work
 *              started elsewhere, which cannot be called off)
 */
final class Background[T] private (future: Future[T], claim: Option[AtomicBoolean], runFirst: Option[FutureTask[T]] = None) {
  def isDone: Boolean = future.isDone
  def result: T = {
    runFirst.foreach(_.run()) // at most once: a task run or cancelled before is left as it is
    try future.get() catch { case e: ExecutionException if e.getCause != null => throw e.getCause }
  }

  /**
   * Calls the work off if it has not started: whether it never will (else it runs or ran to its
   * end, and its result, if any, is the caller's to release). A future's own `cancel` would not
   * do: it succeeds while the work runs, which then runs on with no one to take its result.
   */
  def cancel(): Boolean = claim.exists(_.compareAndSet(false, true)) && { future.cancel(false); true }
}

object Background {
  /** `work`, done on the thread that first asks for its result, when it does. */
  def later[T](work: () => T): Background[T] = {
    val claim = new AtomicBoolean()
    val task = new FutureTask[T](claiming(claim, work))
    new Background(task, Some(claim), Some(task))
  }

  /** `work`, handed to `start` (an executor's `submit`, say), which runs it on another thread. */
  def started[T](start: Callable[T] => Future[T])(work: () => T): Background[T] = {
    val claim = new AtomicBoolean()
    new Background(start(claiming(claim, work)), Some(claim))
  }

  /** Work under way as `future`; it cannot be called off. */
  def of[T](future: Future[T]): Background[T] = new Background(future, None)

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

  private def claiming[T](claim: AtomicBoolean, work: () => T): Callable[T] = () =>
    if (claim.compareAndSet(false, true)) work() else throw new CancellationException("called off before it started")
}
