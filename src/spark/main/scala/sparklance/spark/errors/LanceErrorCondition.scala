package sparklance.spark.errors

/**
 * An error condition of sparklance, in Spark's error framework: a name (`getCondition()` in Scala
 * and Python), a SQLSTATE (`getSqlState()`), and a message template whose `<parameter>`s the
 * exception's message parameters fill. docs/errors.md lists them for users.
 */
sealed abstract class LanceErrorCondition(val name: String, val sqlState: String, val kind: ErrorKind, val template: String) {
  /** The parameters the template names, in order of first use. */
  val parameters: Seq[String] = LanceErrorCondition.Parameter.findAllMatchIn(template).map(_.group(1)).toSeq.distinct

  /** The message: the template with each `<parameter>` replaced by its value. */
  def message(values: Map[String, String]): String = {
    val missing = parameters.filterNot(values.contains)
    require(missing.isEmpty, s"Error condition $name needs parameters ${missing.mkString(", ")}")
    LanceErrorCondition.Parameter.replaceAllIn(template, m => scala.util.matching.Regex.quoteReplacement(values(m.group(1))))
  }

  /** The exception's message, as Spark writes its own: `[NAME] message SQLSTATE: state`. */
  def fullMessage(values: Map[String, String]): String = s"[$name] ${message(values)} SQLSTATE: $sqlState"

  override def toString: String = name
}

object LanceErrorCondition {
  private val Parameter = "<([A-Za-z][A-Za-z0-9_]*)>".r
  import ErrorKind._

  case object TableNotFound extends LanceErrorCondition("LANCE_TABLE_NOT_FOUND", "42P01", Analysis,
    "No Lance table at <path>.")
  case object VersionNotFound extends LanceErrorCondition("LANCE_VERSION_NOT_FOUND", "42704", Analysis,
    "<message>.")
  case object VersionRemoved extends LanceErrorCondition("LANCE_VERSION_REMOVED", "42704", Analysis,
    "<message>.")
  case object NoVersionAtTimestamp extends LanceErrorCondition("LANCE_NO_VERSION_AT_TIMESTAMP", "42704", Analysis,
    "<table> has no version as of <timestamp>: <reason>.")
  case object TagNotFound extends LanceErrorCondition("LANCE_TAG_NOT_FOUND", "42704", Analysis, "<message>.")
  case object TagAlreadyExists extends LanceErrorCondition("LANCE_TAG_ALREADY_EXISTS", "42710", Analysis, "<message>.")
  case object BranchNotFound extends LanceErrorCondition("LANCE_BRANCH_NOT_FOUND", "42704", Analysis, "<message>.")
  case object BranchAlreadyExists extends LanceErrorCondition("LANCE_BRANCH_ALREADY_EXISTS", "42710", Analysis, "<message>.")
  case object UnfinishedBranch extends LanceErrorCondition("LANCE_UNFINISHED_BRANCH", "55000", Analysis, "<message>.")
  case object ColumnNotFound extends LanceErrorCondition("LANCE_COLUMN_NOT_FOUND", "42703", Analysis, "<message>.")
  case object IndexNotFound extends LanceErrorCondition("LANCE_INDEX_NOT_FOUND", "42704", Analysis, "<message>.")
  case object ReservedColumn extends LanceErrorCondition("LANCE_RESERVED_COLUMN_NAME", "42939", Analysis, "<message>.")
  case object InvalidTableProperty extends LanceErrorCondition("LANCE_INVALID_TABLE_PROPERTY", "42602", Analysis,
    "Table property '<property>' of <table>: <detail>.")
  case object InvalidName extends LanceErrorCondition("LANCE_INVALID_NAME", "42602", Analysis, "<message>.")
  case object InvalidOption extends LanceErrorCondition("LANCE_INVALID_OPTION", "42616", Analysis, "<message>.")
  case object UnsupportedType extends LanceErrorCondition("LANCE_UNSUPPORTED_TYPE", "0A000", Analysis, "<message>.")
  case object UnsupportedFeature extends LanceErrorCondition("LANCE_UNSUPPORTED_FEATURE", "0A000", Analysis, "<message>.")
  case object SchemaChangeRefused extends LanceErrorCondition("LANCE_SCHEMA_CHANGE_REFUSED", "42837", Analysis, "<message>.")
  case object DroppedTableKept extends LanceErrorCondition("LANCE_DROPPED_TABLE_KEPT", "42P07", Analysis, "<message>.")
  case object ProcedureNotFound extends LanceErrorCondition("LANCE_PROCEDURE_NOT_FOUND", "42883", Analysis,
    "Catalog <catalog> has no procedure <procedure>; its procedures are <known>.")
  case object ChangeDataAcrossSchemaChange extends LanceErrorCondition("LANCE_CHANGE_DATA_ACROSS_SCHEMA_CHANGE", "0A000", Analysis,
    "Change data of <table> for versions <first> to <last> cannot be served in the schema of version <last>: version " +
      "<version> <change>, and rows of the versions before it have no place in that schema. Read change data from " +
      "version <next> on, or in ranges that end before version <version><advice>.")
  case object InvalidArgument extends LanceErrorCondition("LANCE_INVALID_ARGUMENT", "22023", ErrorKind.InvalidArgument,
    "<message>.")
  case object ConcurrentCommitConflict extends LanceErrorCondition("LANCE_CONCURRENT_COMMIT_CONFLICT", "40001", Execution,
    "<message>. Re-run the statement: it reads the new version.")
  case object ConcurrentTableReplaced extends LanceErrorCondition("LANCE_CONCURRENT_TABLE_REPLACED", "40000", Execution,
    "<message>. The table was replaced or restored meanwhile: check that the statement still means what it should before re-running it.")
  case object CommitStateUnknown extends LanceErrorCondition("LANCE_COMMIT_STATE_UNKNOWN", "40003", Execution, "<message>.")
  case object FileGone extends LanceErrorCondition("LANCE_FILE_GONE", "58P01", Execution, "<message>.")
  case object NotNullViolation extends LanceErrorCondition("LANCE_NOT_NULL_VIOLATION", "23502", Execution,
    "NULL value in non-nullable column '<column>' of <table>. Nothing of the statement was written.")
  case object InvalidValue extends LanceErrorCondition("LANCE_INVALID_VALUE", "22000", Execution,
    "<message>. Nothing of the statement was written.")
  case object IdentityColumnViolation extends LanceErrorCondition("LANCE_IDENTITY_COLUMN_VIOLATION", "428C9", Execution,
    "<message>. Nothing of the statement was written.")
  case object CheckConstraintViolated extends LanceErrorCondition("LANCE_CHECK_CONSTRAINT_VIOLATED", "23512", Execution,
    "<message>.")
  case object CorruptFile extends LanceErrorCondition("LANCE_CORRUPT_FILE", "XX001", Execution, "<message>.")
  case object StreamChangeCommit extends LanceErrorCondition("LANCE_STREAM_CHANGE_COMMIT", "55000", Execution, "<message>.")
  case object StreamSchemaChange extends LanceErrorCondition("LANCE_STREAM_SCHEMA_CHANGE", "55000", Execution, "<message>.")
  case object StreamUntrackedVersion extends LanceErrorCondition("LANCE_STREAM_UNTRACKED_VERSION", "55000", Execution, "<message>.")
  case object StreamSinkSchemaMismatch extends LanceErrorCondition("LANCE_STREAM_SINK_SCHEMA_MISMATCH", "42804", Analysis,
    "<message>. Nothing was written.")

  // Lazy: a case object touched first initializes this object mid-way through its own
  // construction, and a strict list would then hold null in its place.
  /** Every condition, for the docs and the checks of the catalogue. */
  lazy val values: Seq[LanceErrorCondition] = Seq(TableNotFound, VersionNotFound, VersionRemoved, NoVersionAtTimestamp,
    TagNotFound, TagAlreadyExists, BranchNotFound, BranchAlreadyExists, UnfinishedBranch, ColumnNotFound, IndexNotFound, ReservedColumn,
    InvalidTableProperty, InvalidName, InvalidOption, UnsupportedType, UnsupportedFeature, SchemaChangeRefused, DroppedTableKept,
    ProcedureNotFound, ChangeDataAcrossSchemaChange, InvalidArgument, ConcurrentCommitConflict, ConcurrentTableReplaced, CommitStateUnknown, FileGone,
    NotNullViolation, InvalidValue, IdentityColumnViolation, CheckConstraintViolated, CorruptFile, StreamChangeCommit, StreamSchemaChange, StreamUntrackedVersion,
    StreamSinkSchemaMismatch)

  /** The conditions where re-running the statement as it is can succeed. */
  lazy val retryable: Set[LanceErrorCondition] = Set(ConcurrentCommitConflict, FileGone)
}
