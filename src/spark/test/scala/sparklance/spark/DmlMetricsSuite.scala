package sparklance.spark

import java.util.concurrent.ConcurrentLinkedQueue
import org.apache.logging.log4j.{Level, LogManager}
import org.apache.logging.log4j.core.{LogEvent, LoggerContext}
import org.apache.logging.log4j.core.appender.AbstractAppender
import org.apache.logging.log4j.core.config.Property
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._

/**
 * The metrics of DELETE / UPDATE / MERGE reach the SQL tab of the Spark UI (which is on, as it is
 * by default): Spark instantiates each metric class by name to aggregate the task values, and
 * nothing is logged at ERROR on the way.
 */
class DmlMetricsSuite extends AnyFunSuite with LocalSpark {

  /** Collects every ERROR event logged while `body` runs. */
  private def errorsDuring(body: => Unit): Seq[String] = {
    val seen = new ConcurrentLinkedQueue[String]()
    val appender = new AbstractAppender("dml-metrics-errors", null, null, true, Property.EMPTY_ARRAY) {
      override def append(event: LogEvent): Unit =
        if (event.getLevel.isMoreSpecificThan(Level.ERROR))
          seen.add(s"${event.getLoggerName}: ${event.getMessage.getFormattedMessage} ${Option(event.getThrown).getOrElse("")}")
    }
    appender.start()
    val root = LogManager.getContext(false).asInstanceOf[LoggerContext].getConfiguration.getRootLogger
    root.addAppender(appender, Level.ERROR, null)
    try body finally { root.removeAppender(appender.getName); appender.stop() }
    seen.asScala.toSeq
  }

  private val dmlMetricNames = Set("number of rows deleted", "number of rows updated", "number of rows inserted",
    "number of deletion files written", "number of data files written",
    "number of rows updated in place (columns rewritten)", "number of fragments whose columns were rewritten")

  /** The metrics of the SQL execution of `statement`, by description, once the UI has recorded them. */
  private def metricsOf(statement: String): Map[String, Long] = {
    val store = spark.sharedState.statusStore
    val before = store.executionsList().map(_.executionId).toSet
    sql(statement)
    val deadline = System.nanoTime() + 30L * 1000 * 1000 * 1000
    while (System.nanoTime() < deadline) {
      val done = store.executionsList().filterNot(e => before(e.executionId))
        .filter(e => e.completionTime.isDefined && e.metricValues != null)
      val values = done.flatMap { e =>
        val byId = store.executionMetrics(e.executionId)
        e.metrics.flatMap(m => byId.get(m.accumulatorId).map(m.name -> _))
      }.toMap
      if (values.contains("number of data files written"))
        return values.collect { case (k, v) if dmlMetricNames(k) => k ->
          v.trim.replace(",", "").toLongOption.getOrElse(fail(s"metric '$k' of '$statement' has no value: '$v'")) }
      Thread.sleep(50)
    }
    fail(s"no DML metrics were recorded for: $statement")
  }

  test("DELETE, UPDATE and MERGE report their metrics to the UI without errors") {
    assert(spark.sparkContext.uiWebUrl.isDefined, "the UI must be on, as it is by default")
    sql("CREATE NAMESPACE IF NOT EXISTS lance.m")
    sql("CREATE TABLE lance.m.t (id BIGINT NOT NULL, v INT) TBLPROPERTIES ('max_rows_per_file' = '10', 'optimize_write' = 'false')")
    sql("INSERT INTO lance.m.t SELECT /*+ COALESCE(1) */ id, 0 FROM range(40)")
    var delete, update, merge = Map.empty[String, Long]
    val errors = errorsDuring {
      delete = metricsOf("DELETE FROM lance.m.t WHERE id < 5")
      update = metricsOf("UPDATE lance.m.t SET v = 1 WHERE id >= 35 OR id = 12")
      merge = metricsOf("MERGE INTO lance.m.t t USING (SELECT id FROM range(30, 45)) s ON t.id = s.id " +
        "WHEN MATCHED THEN UPDATE SET v = 2 WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 3)")
    }
    assert(errors.isEmpty, errors.mkString("\n"))
    assert(delete("number of rows deleted") == 5 && delete("number of rows updated") == 0)
    assert(delete("number of deletion files written") == 1 && delete("number of data files written") == 0)
    // Half of fragment 3 changes: its column v is rewritten in place; the row of fragment 1 moves.
    assert(update("number of rows updated") == 6 && update("number of rows inserted") == 0)
    assert(update("number of rows updated in place (columns rewritten)") == 5)
    assert(update("number of fragments whose columns were rewritten") == 1)
    assert(update("number of data files written") == 2 && update("number of deletion files written") == 1)
    assert(merge("number of rows updated") == 10 && merge("number of rows inserted") == 5)
    assert(merge("number of rows deleted") == 0)
    assert(sql("SELECT count(*) FROM lance.m.t").first().getLong(0) == 40)
  }
}
