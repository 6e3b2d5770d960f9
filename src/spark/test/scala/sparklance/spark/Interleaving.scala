package sparklance.spark

import java.util.concurrent.{CountDownLatch, TimeUnit}
import org.apache.spark.sql.SparkSession
import org.scalatest.Assertions
import scala.concurrent.{Await, Future}
import scala.concurrent.ExecutionContext.Implicits.global
import scala.concurrent.duration._
import scala.util.Try
import sparklance.format.CommitConflictException

/**
 * Two statements interleaved at a gate: the first runs in its job until a task reaches [[Gate]]
 * (a UDF `gate` the session registers, which Spark cannot push into the scan), the second commits
 * meanwhile, then the gate opens and the first one commits.
 */
object Interleaving extends Assertions {
  /** The first statement's outcome: None if it landed, else its commit conflict's message (other failures are thrown). */
  def run(spark: SparkSession, statement: String, meanwhile: String): Option[String] = run(spark, statement, spark.sql(statement), meanwhile)

  /** The same for a statement of the DataFrame API, `what` naming it. */
  def run(spark: SparkSession, what: String, statement: => Any, meanwhile: String): Option[String] = {
    Gate.close()
    val running = Future(Try(statement))
    while (!Gate.reached.await(100, TimeUnit.MILLISECONDS))
      running.value.foreach(done => fail(s"ended before its gate ($done): $what"))
    spark.sql(meanwhile)
    Gate.open()
    Await.result(running, 2.minutes).failed.toOption.map { e =>
      val conflict = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).collectFirst { case c: CommitConflictException => c }
      conflict.getOrElse(throw e).getMessage
    }
  }
}

/**
 * Holds every task that calls `pass` until the test opens it, and tells the test one arrived. A
 * gated stage must leave task slots free for the statement the test commits meanwhile, so the
 * gated inputs here are single partitions.
 */
object Gate {
  @volatile private var opened = new CountDownLatch(0)
  @volatile var reached = new CountDownLatch(0)

  def close(): Unit = { opened = new CountDownLatch(1); reached = new CountDownLatch(1) }
  def open(): Unit = opened.countDown()
  def pass(): Unit = { reached.countDown(); opened.await(120, TimeUnit.SECONDS) }
}
