package sparklance.spark.scan

import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.expressions.{And, BoundReference, Expression, GetStructField, Predicate => CatalystPredicate, V2ExpressionUtils}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.types.{StructField, StructType}
import scala.util.control.NonFatal
import sparklance.format.commit.ReadSet
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.Snapshot
import sparklance.spark.{LanceTable, SparkTypes}

/**
 * The rows a statement's scans could have returned: each scan, the conjunction of the predicates
 * Spark pushed into it. Rows committed concurrently are read back on the driver (only the columns
 * the predicates name) and tested; a predicate Spark cannot turn back into an expression is
 * dropped, which only widens what counts as read.
 */
final class PredicateReadSet(table: LanceTable, scans: Seq[Seq[Predicate]]) extends ReadSet {
  private val conditions: Seq[Option[Expression]] = scans.map { pushed =>
    // V2ExpressionUtils is Spark's own, but internal: should a Spark release change it, a predicate
    // it cannot convert only widens the read set.
    pushed.flatMap(p => try V2ExpressionUtils.toCatalyst(p) catch { case NonFatal(_) | _: LinkageError => None })
      .reduceOption(And)
  }

  override def mayHaveRead(snapshot: Snapshot, fragments: Seq[DataFragment]): Boolean = {
    // A fragment whose rows are all deleted is dropped from the manifest, so rows here are live
    // but for some deleted ones, which the reader skips.
    val live = fragments.filter(_.getPhysicalRows > 0)
    if (live.isEmpty) return false
    // A scan with no usable predicate read every row; too many rows to check on the driver are
    // assumed read rather than scanned for.
    if (conditions.exists(_.isEmpty) || live.map(_.getPhysicalRows).sum > PredicateReadSet.MaxRowsChecked) return true
    val schema = SparkTypes.toSpark(snapshot.schema, table.tableName)
    val columns = conditions.flatten.flatMap(_.collect { case a: UnresolvedAttribute => a.nameParts.head }).distinct
    val fields = columns.map(name => schema.fields.find(_.name == name)
      .orElse(LanceTable.MetadataColumns.find(_.name == name).map(m => StructField(m.name, m.dataType, nullable = false))))
    if (fields.exists(_.isEmpty)) return true // a column the concurrent version no longer has
    val readSchema = StructType(fields.flatten)
    val bound = conditions.flatten.map(bind(_, readSchema))
    if (bound.exists(_.isEmpty)) return true
    val tests = bound.flatten.map { e => val p = CatalystPredicate.createInterpreted(e); p.initialize(0); p }
    val target = ReadTarget(table.tableName, snapshot.files,
      readSchema.fields.toSeq.filterNot(f => LanceTable.MetadataNames(f.name)).map(f => snapshot.schema.field(f.name).get),
      readSchema, table.settings.storageConf, table.settings.readBatchBytes)
    live.exists { fragment =>
      val reader = new LanceColumnarReader(target, LanceInputPartition(IndexedSeq(FragmentSplit(fragment.toByteArray, 0, fragment.getPhysicalRows))))
      try {
        var matched = false
        while (!matched && reader.next()) {
          val rows = reader.get().rowIterator()
          while (!matched && rows.hasNext) { val row = rows.next(); matched = tests.exists(_.eval(row)) }
        }
        matched
      } finally reader.close()
    }
  }

  /** Binds column references (nested ones as struct field accesses) to `schema`; None if one is not there. */
  private def bind(condition: Expression, schema: StructType): Option[Expression] = {
    var unresolved = false
    val out = condition.transform { case UnresolvedAttribute(parts) =>
      val top = schema.fieldIndex(parts.head)
      parts.tail.foldLeft[(Expression, org.apache.spark.sql.types.DataType)](
          (BoundReference(top, schema(top).dataType, schema(top).nullable), schema(top).dataType)) {
        case ((e, s: StructType), name) if s.fieldNames.contains(name) =>
          val i = s.fieldIndex(name); (GetStructField(e, i, Some(name)), s(i).dataType)
        case ((e, t), _) => unresolved = true; (e, t)
      }._1
    }
    if (unresolved) None else Some(out)
  }
}

object PredicateReadSet {
  /** Concurrently added rows beyond this many are not read back; they count as read. */
  val MaxRowsChecked: Long = 5L * 1000 * 1000
}
