package sparklance.spark

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.connector.catalog.TableChange
import org.apache.spark.sql.connector.catalog.constraints.Check
import scala.jdk.CollectionConverters._
import sparklance.format.CommitConflictException
import sparklance.format.commit.{CommitRecord, Committer, Isolation, Operation, ReadSet, Statement}
import sparklance.format.table.{Dataset, Snapshot}

/**
 * `ALTER TABLE t ADD CONSTRAINT c CHECK (expr)` and `DROP CONSTRAINT [IF EXISTS] c`, one
 * UpdateConfig commit each (see [[CheckConstraints]] for where constraints are kept).
 *
 * Adding a constraint first counts the rows of the latest version that violate it, and refuses it
 * naming the count. The commit then checks, like a serializable statement that read every row,
 * the rows other writers committed after that version (its [[ReadSet]] counts their violations):
 * a violating row that landed meanwhile makes the commit lose, and the statement counts again on
 * the new version, which then refuses it. Writers planned before the constraint existed cannot
 * commit after it (the commit layer's constraint barrier makes them retry, and the statement run
 * again is checked by Spark).
 */
final class ConstraintAlteration(table: String, dataset: Dataset, settings: CatalogSettings) {
  def apply(changes: Seq[TableChange]): Unit = {
    var attempt = 0
    // The version whose rows were counted last, and the fragments (by id and files) it had.
    var counted = Option.empty[Snapshot]
    while (true) {
      val snapshot = dataset.snapshot(forWrite = true)
      val before = CheckConstraints.of(snapshot.config)
      val (added, dropped) = changed(before, changes)
      if (added.isEmpty && dropped.isEmpty) return
      val fragments = counted.map(changedSince(_, snapshot))
      if (!fragments.exists(_.isEmpty)) added.foreach(c => refuseViolated(snapshot, c, fragments))
      counted = Some(snapshot)
      val op = Operation.UpdateConfig(config = added.map(CheckConstraints.entry).toMap,
        removedConfig = dropped.map(CheckConstraints.key).toSet)
      // The rows committed after `snapshot` were never counted: the commit counts their violations.
      val reads: ReadSet = (concurrent, written) => added.exists(c =>
        CheckConstraints.violations(table, concurrent, c, Some(written.map(_.getId))) > 0)
      try {
        new Committer(dataset, settings.commitRetries, Isolation.Serializable).commit(Some(snapshot), op,
          reads = Some(if (added.isEmpty) ReadSet.Blind else reads),
          record = Some(CommitRecord(if (added.nonEmpty) Statement.AddConstraint else Statement.DropConstraint)))
        return
      } catch { case e: CommitConflictException if e.retryable && attempt < settings.commitRetries.count => attempt += 1 }
    }
  }

  /**
   * The constraints `changes` add and the names of those they drop, refused with Spark's conditions
   * (names compared case-insensitively, as Spark does): a name already taken
   * (CONSTRAINT_ALREADY_EXISTS), a missing one without IF EXISTS (CONSTRAINT_DOES_NOT_EXIST).
   */
  private def changed(before: Seq[Check], changes: Seq[TableChange]): (Seq[Check], Seq[String]) = {
    var kept = before
    val added = Seq.newBuilder[Check]
    val dropped = Seq.newBuilder[String]
    def find(name: String) = kept.find(_.name().equalsIgnoreCase(name))
    changes.foreach {
      case a: TableChange.AddConstraint =>
        val check = CheckConstraints.accepted(table, a.constraint())
        find(check.name()).foreach(old => throw new AnalysisException("CONSTRAINT_ALREADY_EXISTS",
          Map("constraintName" -> old.name(), "oldConstraint" -> old.toDDL)))
        kept :+= check
        added += check
      case d: TableChange.DropConstraint => find(d.name()) match {
        case Some(old) => kept = kept.filterNot(_ eq old); dropped += old.name()
        case None if d.ifExists() =>
        case None => throw new AnalysisException("CONSTRAINT_DOES_NOT_EXIST", Map("constraintName" -> d.name(), "tableName" -> table))
      }
      case other => throw new UnsupportedOperationException(s"ALTER TABLE $table: ${other.getClass.getSimpleName} with constraint changes")
    }
    (added.result(), dropped.result())
  }

  private def refuseViolated(snapshot: Snapshot, check: Check, fragments: Option[Seq[Long]]): Unit = {
    val bad = CheckConstraints.violations(table, snapshot, check, fragments)
    if (bad > 0) {
      // The count names all violating rows of the version, not only those of the fragments looked at.
      val all = if (fragments.isEmpty) bad else CheckConstraints.violations(table, snapshot, check)
      throw new CheckConstraintViolatedException(table, check.name(), check.predicateSql(), all, snapshot.version)
    }
  }

  /** The fragments of `now` that are new since `then` or hold other data files (rows appended or rewritten). */
  private def changedSince(earlier: Snapshot, now: Snapshot): Seq[Long] = {
    val before = earlier.fragments.map(f => f.getId -> f.getFilesList.asScala.toSeq).toMap
    now.fragments.filterNot(f => before.get(f.getId).contains(f.getFilesList.asScala.toSeq)).map(_.getId)
  }
}
