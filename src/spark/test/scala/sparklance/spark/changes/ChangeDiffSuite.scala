package sparklance.spark.changes

import org.apache.spark.sql.{DataFrame, Row}
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random
import sparklance.spark.LocalSpark

/**
 * CHANGES of each commit of random UPDATE / DELETE / MERGE / INSERT statements equals what the two
 * versions the commit compares give read as plain tables: ids only before were deleted, ids only
 * after inserted, and ids in both that the commit last updated (their `_row_last_updated_at_version`
 * after it) updated, the old row as pre-image and the new one as post-image. Statements hit rows
 * spread over every fragment (residues of the key), few of a fragment's rows (rewritten whole) and
 * most of them (rewritten in place), so the planning of the change slices, the pre-images read by
 * row address from the previous version's fragments and the change type of each row are all
 * checked against a read that knows nothing of them.
 */
class ChangeDiffSuite extends AnyFunSuite with LocalSpark {
  private val table = "lance.cdiff.t"
  private val columns = "id, a, s, _rowid"

  private def version(): Long = sql(s"SELECT max(version) FROM $table.history").head().getLong(0)

  private def at(v: Long): DataFrame =
    sql(s"SELECT $columns, _row_last_updated_at_version AS updated FROM $table VERSION AS OF $v")

  /** Commit `v`'s changes from a diff of versions v - 1 and v, as (columns..., change type). */
  private def diff(v: Long, computeUpdates: Boolean): Seq[Row] = {
    val (before, after) = (at(v - 1).collect(), at(v).collect())
    def byId(rows: Array[Row]) = rows.map(r => r.getLong(3) -> r).toMap
    val (was, now) = (byId(before), byId(after))
    def row(r: Row, kind: String) = Row(r.getLong(0), r.get(1), r.get(2), r.getLong(3), kind)
    val (pre, post) = if (computeUpdates) ("update_preimage", "update_postimage") else ("delete", "insert")
    was.values.collect { case r if !now.contains(r.getLong(3)) => row(r, "delete") }.toSeq ++
      now.values.collect { case r if !was.contains(r.getLong(3)) => row(r, "insert") } ++
      now.values.filter(r => was.contains(r.getLong(3)) && r.getLong(4) == v).flatMap { r =>
        Seq(row(was(r.getLong(3)), pre), row(r, post))
      }
  }

  private def changes(v: Long, computeUpdates: Boolean): Seq[Row] =
    sql(s"SELECT $columns, _change_type FROM $table CHANGES FROM VERSION $v TO VERSION $v " +
      s"WITH (computeUpdates = '$computeUpdates')").collect().toSeq

  private def sorted(rows: Seq[Row]): Seq[String] = rows.map(_.toString).sorted

  test("each commit's changes equal the diff of the two versions it compares, read as plain tables") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cdiff")
    sql(s"CREATE TABLE $table (id BIGINT NOT NULL, a INT, s STRING) TBLPROPERTIES " +
      "('enable_stable_row_ids' = 'true', 'max_rows_per_file' = '60', 'optimize_write' = 'false')")
    sql(s"INSERT INTO $table SELECT /*+ COALESCE(1) */ id, CAST(id % 7 AS INT), concat('s', id) FROM range(300)")
    val r = new Random(37)
    var next = 300L
    val kinds = scala.collection.mutable.Map.empty[String, Int].withDefaultValue(0)
    (1 to 24).foreach { step =>
      val m = 2 + r.nextInt(30)
      val k = r.nextInt(m)
      val (kind, statement) = r.nextInt(6) match {
        case 0 => "update spread" -> s"UPDATE $table SET a = a + 1 WHERE id % $m = $k"
        case 1 => "update most" -> s"UPDATE $table SET s = concat(s, 'x') WHERE id % $m <> $k"
        case 2 => "delete" -> s"DELETE FROM $table WHERE id % $m = $k"
        case 3 =>
          val fresh = (0 until 1 + r.nextInt(20)).map(i => next + i)
          next += fresh.size
          "insert" -> s"INSERT INTO $table VALUES ${fresh.map(i => s"($i, ${i % 5}, 'n$i')").mkString(", ")}"
        case _ =>
          val fresh = (0 until r.nextInt(10)).map(i => next + i)
          next += fresh.size
          val source = (0L until next by m.toLong).map(_ + k) ++ fresh
          "merge" -> (s"MERGE INTO $table t USING (SELECT * FROM VALUES ${source.map(i => s"($i)").mkString(", ")} AS s(id)) s " +
            "ON t.id = s.id WHEN MATCHED AND t.a = 3 THEN DELETE WHEN MATCHED THEN UPDATE SET a = -t.a, s = upper(t.s) " +
            "WHEN NOT MATCHED THEN INSERT (id, a, s) VALUES (s.id, 0, 'm')")
      }
      val before = version()
      sql(statement)
      val v = version()
      if (v > before) {
        kinds(kind) += 1
        Seq(true, false).foreach { computeUpdates =>
          val (got, want) = (changes(v, computeUpdates), diff(v, computeUpdates))
          assert(sorted(got) == sorted(want), s"step $step, version $v ($statement), computeUpdates = $computeUpdates: " +
            s"unexpected ${sorted(got).diff(sorted(want)).take(10)}, missing ${sorted(want).diff(sorted(got)).take(10)}")
        }
      }
    }
    // The run made every kind of commit it is meant to check.
    assert(Seq("update spread", "update most", "delete", "insert", "merge").forall(kinds(_) > 0), kinds)
  }
}
