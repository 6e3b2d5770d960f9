package sparklance.spark.errors

import org.apache.spark.SparkThrowable
import sparklance.format._
import sparklance.spark.{streaming, write}
import sparklance.spark.{CheckConstraintViolatedException, IdentityViolationException, InvalidNameException, InvalidValueException, NotNullViolationException, ReservedColumnException, UnsupportedColumnException, UnsupportedTypeException}
import sparklance.spark.errors.{LanceErrorCondition => C}

/**
 * The one conversion of sparklance's typed errors into Spark's error framework, applied where a
 * call leaves sparklance for Spark: the catalog, table loading, scan planning, the commits of
 * writes and row-level statements, procedures and the path data source. `sparklance.format` stays
 * free of Spark, so its exceptions are converted here, each kept as the cause.
 */
object LanceErrors {
  /** A Spark-framework exception of `condition`, of the class its [[ErrorKind]] names. */
  def apply(condition: LanceErrorCondition, parameters: Map[String, String], cause: Throwable = null): Throwable with LanceThrowable =
    condition.kind match {
      case ErrorKind.Analysis => new LanceAnalysisException(condition, parameters, cause)
      case ErrorKind.InvalidArgument => new LanceIllegalArgumentException(condition, parameters, cause)
      case ErrorKind.Execution => new LanceExecutionException(condition, parameters, cause)
    }

  /** Runs `body`, converting what it throws (see [[convert]]). */
  def converting[T](body: => T): T =
    try body catch { case e: Exception => throw convert(e) }

  /**
   * [[converting]] where every IllegalArgumentException not in Spark's framework is about the
   * caller's input: `condition` (LANCE_INVALID_ARGUMENT for a procedure's arguments,
   * LANCE_INVALID_OPTION for a data source's options).
   */
  def convertingArguments[T](condition: LanceErrorCondition = C.InvalidArgument)(body: => T): T =
    try body catch {
      case e: IllegalArgumentException if !e.isInstanceOf[SparkThrowable] => throw of(condition, e)
      case e: Exception => throw convert(e)
    }

  /**
   * `e` in Spark's error framework: already there (a SparkThrowable) as it is, a sparklance error
   * as its condition, anything else (an IOException, a bug) as it is.
   */
  def convert(e: Throwable): Throwable = e match {
    case _: SparkThrowable => e
    case t: TableNotFoundException => of(C.TableNotFound, e, "path" -> t.path)
    case v: VersionRemovedException =>
      of(C.VersionRemoved, e, "path" -> v.path, "version" -> v.version.toString, "oldest" -> v.oldest.toString)
    case v: VersionNotFoundException => of(C.VersionNotFound, e, "path" -> v.path, "version" -> v.version.toString)
    case t: TagNotFoundException => of(C.TagNotFound, e, "path" -> t.path, "tag" -> t.tag)
    case t: TagAlreadyExistsException => of(C.TagAlreadyExists, e, "path" -> t.path, "tag" -> t.tag)
    case b: BranchNotFoundException => of(C.BranchNotFound, e, "path" -> b.path, "branch" -> b.branch)
    case b: BranchAlreadyExistsException => of(C.BranchAlreadyExists, e, "path" -> b.path, "branch" -> b.branch)
    case b: UnfinishedBranchException => of(C.UnfinishedBranch, e, "path" -> b.path, "branch" -> b.branch)
    case i: IndexNotFoundException => of(C.IndexNotFound, e, "path" -> i.path, "column" -> i.column, "indexType" -> i.indexType)
    case n: InvalidNameException => of(C.InvalidName, e, "name" -> n.name)
    case o: InvalidOptionException => of(C.InvalidOption, e, "option" -> o.option)
    case c: CommitConflictException =>
      of(if (c.retryable) C.ConcurrentCommitConflict else C.ConcurrentTableReplaced, e, "path" -> c.tablePath, "version" -> c.version.toString)
    case c: CommitStateUnknownException => of(C.CommitStateUnknown, e, "path" -> c.tablePath, "version" -> c.version.toString)
    case f: FileGoneException => of(C.FileGone, e, "path" -> f.tablePath, "file" -> f.file)
    case n: NotNullViolationException => of(C.NotNullViolation, e, "table" -> n.table, "column" -> n.column)
    case v: InvalidValueException => of(C.InvalidValue, e, "column" -> v.column)
    case i: IdentityViolationException => of(C.IdentityColumnViolation, e, "table" -> i.table, "column" -> i.column)
    case c: CheckConstraintViolatedException => of(C.CheckConstraintViolated, e, "table" -> c.table,
      "constraint" -> c.constraint, "rows" -> c.rows.toString, "version" -> c.version.toString)
    case f: CorruptFileException => of(C.CorruptFile, e, "file" -> f.path)
    case s: SchemaChangeException => of(C.SchemaChangeRefused, e, "table" -> s.table, "column" -> s.column)
    case d: DroppedTableKeptException => of(C.DroppedTableKept, e, "table" -> d.table, "path" -> d.path)
    case _: ReservedColumnException => of(C.ReservedColumn, e)
    case u: UnsupportedColumnException => of(C.UnsupportedType, e, "table" -> u.table, "column" -> u.column)
    case _: UnsupportedTypeException => of(C.UnsupportedType, e)
    case _: UnsupportedFeatureException => of(C.UnsupportedFeature, e)
    case c: streaming.ChangeCommitException =>
      of(C.StreamChangeCommit, e, "table" -> c.table, "version" -> c.version.toString, "operation" -> c.operation)
    case s: streaming.StreamSchemaException => of(C.StreamSchemaChange, e, "table" -> s.table, "version" -> s.version.toString)
    case m: write.StreamSchemaMismatchException => of(C.StreamSinkSchemaMismatch, e, "table" -> m.table)
    case u: streaming.UntrackedVersionException => of(C.StreamUntrackedVersion, e, "table" -> u.table, "version" -> u.version.toString)
    case _ => e
  }

  /** `condition` of `cause`; a template of `<message>.` takes the cause's message (without a final period). */
  private def of(condition: LanceErrorCondition, cause: Throwable, more: (String, String)*): Throwable = {
    val message = if (condition.parameters.contains("message")) Map("message" -> cause.getMessage.stripSuffix(".")) else Map.empty[String, String]
    LanceErrors(condition, message ++ more.toMap, cause)
  }
}
