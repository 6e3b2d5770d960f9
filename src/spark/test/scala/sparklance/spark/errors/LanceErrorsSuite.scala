package sparklance.spark.errors

import java.nio.file.{Files, Paths}
import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.SparkThrowable
import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.catalyst.trees.Origin
import org.apache.spark.sql.execution.QueryExecutionException
import org.scalatest.funsuite.AnyFunSuite
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.LongType
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format._
import sparklance.format.table.LanceSchema
import sparklance.spark.{InvalidValueException, NotNullViolationException}
import sparklance.spark.write.ArrowRowWriter

/** The catalogue of error conditions and the one conversion into Spark's error framework. */
class LanceErrorsSuite extends AnyFunSuite {
  private val conditions = LanceErrorCondition.values

  test("each condition has a unique LANCE_ name and a SQLSTATE Spark knows") {
    // Spark's own list of SQLSTATEs, which its error conditions must use too.
    val states = new ObjectMapper().readTree(getClass.getClassLoader.getResource("error/error-states.json"))
    assert(conditions.map(_.name).distinct.size == conditions.size)
    for (c <- conditions) {
      assert(c.name.matches("LANCE_[A-Z_]+"), c.name)
      assert(c.sqlState.matches("[0-9A-Z]{5}") && states.has(c.sqlState), s"${c.name}: ${c.sqlState}")
    }
  }

  test("message parameters fill the template, and a missing one is an error naming it") {
    for (c <- conditions) {
      val values = c.parameters.map(p => p -> s"value-of-$p").toMap
      val message = c.message(values)
      assert(c.parameters.nonEmpty && c.parameters.forall(p => message.contains(s"value-of-$p")), s"${c.name}: $message")
      assert(!message.contains("<") && !message.contains(">"), message)
      val missing = intercept[IllegalArgumentException](c.message(Map.empty))
      assert(missing.getMessage.contains(c.name) && missing.getMessage.contains(c.parameters.head))
    }
    // A value that looks like a regex replacement is taken as it is.
    assert(LanceErrorCondition.TableNotFound.message(Map("path" -> "/w/$1\\x")) == "No Lance table at /w/$1\\x.")
  }

  test("docs/errors.md lists every condition with its SQLSTATE") {
    val doc = new String(Files.readAllBytes(Paths.get("docs/errors.md")), "UTF-8")
    for (c <- conditions) assert(doc.linesIterator.exists(l => l.contains(s"`${c.name}`") && l.contains(c.sqlState)), c.name)
  }

  private def converted(e: Throwable): Throwable with SparkThrowable = {
    val out = LanceErrors.convert(e)
    assert(out.getCause eq e, "the original is the cause")
    out.asInstanceOf[Throwable with SparkThrowable]
  }

  test("a missing version, tag or table is an AnalysisException with its condition, SQLSTATE and parameters") {
    val missing = converted(new VersionNotFoundException("/w/t.lance", 9, 3L))
    assert(missing.isInstanceOf[AnalysisException])
    assert(missing.getCondition == "LANCE_VERSION_NOT_FOUND" && missing.getSqlState == "42704")
    assert(missing.getMessageParameters.get("version") == "9")
    assert(missing.getMessage ==
      "[LANCE_VERSION_NOT_FOUND] Lance table /w/t.lance has no version 9; its latest version is 3. SQLSTATE: 42704")
    val removed = converted(new VersionRemovedException("/w/t.lance", 2, 5))
    assert(removed.getCondition == "LANCE_VERSION_REMOVED" && removed.getMessageParameters.get("oldest") == "5")
    val tag = converted(new TagNotFoundException("/w/t.lance", "gold", Seq("silver")))
    assert(tag.getCondition == "LANCE_TAG_NOT_FOUND" && tag.getMessage.contains("'silver'"))
    val table = converted(new TableNotFoundException("/w/none.lance"))
    assert(table.getCondition == "LANCE_TABLE_NOT_FOUND" && table.getSqlState == "42P01")
    assert(table.getMessage == "[LANCE_TABLE_NOT_FOUND] No Lance table at /w/none.lance. SQLSTATE: 42P01")
  }

  test("Spark's copy of an AnalysisException keeps the condition and SQLSTATE; withPosition keeps the exception") {
    val e = converted(new TagNotFoundException("/w/t.lance", "gold", Nil)).asInstanceOf[AnalysisException]
    val copy = e.copy(context = Array.empty)
    assert(copy.getCondition == "LANCE_TAG_NOT_FOUND" && copy.getSqlState == "42704")
    assert(copy.getDefaultMessageTemplate == LanceErrorCondition.TagNotFound.template)
    // No query context, which PySpark would look up in Spark's own error file (see LanceAnalysisException).
    val positioned = e.withPosition(Origin(line = Some(1), startPosition = Some(4)))
    assert((positioned eq e) && positioned.getQueryContext.isEmpty)
  }

  test("a commit conflict is a QueryExecutionException a caller can retry on; a replaced table and an unknown outcome are not") {
    val conflict = converted(new CommitConflictException("/w/t.lance", 4, "it deleted rows this commit deletes"))
    assert(conflict.isInstanceOf[QueryExecutionException])
    assert(conflict.getCondition == "LANCE_CONCURRENT_COMMIT_CONFLICT" && conflict.getSqlState == "40001")
    assert(LanceErrorCondition.retryable.contains(LanceErrorCondition.ConcurrentCommitConflict))
    val replaced = converted(new CommitConflictException("/w/t.lance", 4, "it replaced the table", retryable = false))
    assert(replaced.getCondition == "LANCE_CONCURRENT_TABLE_REPLACED" && replaced.getSqlState == "40000")
    val unknown = converted(new CommitStateUnknownException("/w/t.lance", 4, new java.io.IOException("timeout")))
    assert(unknown.getCondition == "LANCE_COMMIT_STATE_UNKNOWN" && unknown.getSqlState == "40003")
    assert(!LanceErrorCondition.retryable.contains(LanceErrorCondition.CommitStateUnknown))
  }

  test("errors already in Spark's framework and errors of no condition pass unchanged") {
    val spark = new AnalysisException("PATH_NOT_FOUND", Map("path" -> "/x"))
    assert(LanceErrors.convert(spark) eq spark)
    val io = new java.io.IOException("disk")
    assert(LanceErrors.convert(io) eq io)
  }

  test("convertingArguments makes a bad argument LANCE_INVALID_ARGUMENT, a bad option LANCE_INVALID_OPTION") {
    val arg = intercept[IllegalArgumentException](LanceErrors.convertingArguments()(throw new IllegalArgumentException("rows_per_zone must be positive")))
    assert(arg.isInstanceOf[LanceIllegalArgumentException])
    assert(arg.asInstanceOf[SparkThrowable].getCondition == "LANCE_INVALID_ARGUMENT" && arg.getMessage.contains("rows_per_zone must be positive."))
    val opt = intercept[AnalysisException](LanceErrors.convertingArguments(LanceErrorCondition.InvalidOption)(
      throw new IllegalArgumentException("Options versionAsOf and tag: give one version only")))
    assert(opt.getCondition == "LANCE_INVALID_OPTION" && opt.getSqlState == "42616")
  }

  test("a NULL for a NOT NULL column met by a write task is LANCE_NOT_NULL_VIOLATION, and survives the trip to the driver") {
    // Spark's own NOT NULL checks usually come first; this is the writer's backstop.
    val schema = LanceSchema.fromArrow(new Schema(List(
      new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null)).asJava))
    val allocator = new RootAllocator()
    try {
      val writer = new ArrowRowWriter("db.t", schema.fields, Seq(LongType), allocator)
      try {
        val raw = intercept[NotNullViolationException](writer.append(InternalRow(null)))
        val e = converted(raw)
        assert(e.isInstanceOf[QueryExecutionException] && e.getCondition == "LANCE_NOT_NULL_VIOLATION" && e.getSqlState == "23502")
        assert(e.getMessageParameters.asScala == Map("table" -> "db.t", "column" -> "id"))
        // A task's failure reaches the driver serialized: the condition must come through.
        val bytes = new java.io.ByteArrayOutputStream()
        Using.resource(new java.io.ObjectOutputStream(bytes))(_.writeObject(e))
        val back = Using.resource(new java.io.ObjectInputStream(new java.io.ByteArrayInputStream(bytes.toByteArray)))(_.readObject())
        assert(back.asInstanceOf[SparkThrowable].getCondition == "LANCE_NOT_NULL_VIOLATION")
      } finally writer.close()
    } finally allocator.close()
  }

  test("a value its column cannot hold is LANCE_INVALID_VALUE naming the column") {
    val e = converted(new InvalidValueException("db.t", "v", "the column holds vectors of 3 items; got an array of 2"))
    assert(e.isInstanceOf[QueryExecutionException] && e.getCondition == "LANCE_INVALID_VALUE" && e.getSqlState == "22000")
    assert(e.getMessageParameters.get("column") == "v" && e.getMessage.contains("vectors of 3 items"))
  }
}
