package sparklance.spark

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.connector.catalog.constraints.{Check, Constraint}
import org.apache.spark.sql.functions.col
import sparklance.format.commit.WriteConstraints
import sparklance.format.table.Snapshot

/**
 * A table's CHECK constraints (`CONSTRAINT c CHECK (expr)` of CREATE TABLE, `ALTER TABLE ... ADD
 * CONSTRAINT`), kept in the Lance table config, one entry per constraint:
 * `sparklance.constraint.<name>` = `{"check": "<the predicate's SQL>", "rely": false}`, so that
 * pylance's own commits (which keep the config) carry them. Spark checks every row its INSERT,
 * UPDATE, MERGE and DataFrame writes produce against the constraints the table reports; a row for
 * which a predicate is false fails the statement (NULL passes, as in SQL).
 */
object CheckConstraints {
  private val json = new ObjectMapper()

  /** The constraints a table config holds, ordered by name. */
  def of(config: Map[String, String]): Seq[Check] =
    WriteConstraints.of(config).toSeq.sortBy(_._1).map { case (key, value) =>
      val node = json.readTree(value)
      Constraint.check(key.stripPrefix(WriteConstraints.Prefix)).predicateSql(node.get("check").asText())
        .rely(Option(node.get("rely")).exists(_.asBoolean())).enforced(true).build()
    }

  /** The config entry that holds `check`. */
  def entry(check: Check): (String, String) = {
    val node: ObjectNode = json.createObjectNode()
    node.put("check", check.predicateSql())
    node.put("rely", check.rely())
    (WriteConstraints.Prefix + check.name()) -> json.writeValueAsString(node)
  }

  def key(name: String): String = WriteConstraints.Prefix + name

  /** `c` as a constraint sparklance keeps: an enforced CHECK; anything else is refused, naming it. */
  def accepted(table: String, c: Constraint): Check = c match {
    case check: Check if check.enforced() => check
    case check: Check => throw new UnsupportedOperationException(s"CHECK constraint ${check.name()} of $table is NOT ENFORCED: " +
      "sparklance enforces every CHECK constraint it keeps; leave NOT ENFORCED out")
    case other => throw new UnsupportedOperationException(s"Constraint ${other.name()} of $table (${other.toDDL}): sparklance " +
      "keeps CHECK constraints only, not PRIMARY KEY, UNIQUE or FOREIGN KEY constraints")
  }

  /** The column paths a constraint's predicate names (as written). */
  def columns(check: Check): Seq[Seq[String]] =
    CatalystSqlParser.parseExpression(check.predicateSql()).collect { case a: UnresolvedAttribute => a.nameParts }.distinct

  /**
   * The constraints of `config` whose predicate names `path`, a column or a field inside it, or a
   * struct holding it (names compared case-insensitively, as Spark resolves them).
   */
  def naming(checks: Seq[Check], path: Seq[String]): Seq[Check] = {
    def prefix(a: Seq[String], b: Seq[String]) = a.size <= b.size && a.zip(b).forall { case (x, y) => x.equalsIgnoreCase(y) }
    checks.filter(c => columns(c).exists(p => prefix(p, path) || prefix(path, p)))
  }

  /** Every constraint Spark checks the writes of a table at `snapshot` against: its own and its generated columns'. */
  def all(table: String, snapshot: Snapshot): Seq[Check] =
    of(snapshot.config) ++ GeneratedColumns.checks(SparkTypes.toSpark(snapshot.schema, table))

  /**
   * How many rows of `snapshot` (of its fragments `fragments` only, when given) violate `check`:
   * rows for which its predicate is false.
   */
  def violations(table: String, snapshot: Snapshot, check: Check, fragments: Option[Seq[Long]] = None): Long = {
    val frame = SparkSession.active.read.option("versionAsOf", snapshot.version.toString).table(table)
    val scoped = fragments.fold(frame)(ids => frame.where(col(LanceTable.FragmentId).isin(ids: _*)))
    scoped.where(s"NOT coalesce((${check.predicateSql()}), true)").count()
  }
}
