package sparklance.spark.write

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Cast, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project, V2WriteCommand}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.types.{ArrayType, Metadata}
import sparklance.spark.{ColumnProperties, InvalidValueException, LanceTable, SparkTypes}
import sparklance.spark.errors.LanceErrors

/**
 * Refuses appends and overwrites whose data is tagged as vectors of another kind than the
 * table's column: a DataFrame column with `lance.vector_dim` (or lance-spark's
 * `arrow.fixed-size-list.size`) of d written into a list column, or into a vector column of
 * another dimension. Spark's write resolution replaces the data's column metadata by the table's,
 * so without this check the tag would be dropped silently (arrays of the right length go in, a
 * list column stays a list). A check of the analyzed plan, whose resolved write has the data's
 * columns in the table's order; untagged arrays are checked row by row when written (their
 * length). Top-level columns only.
 */
object VectorInputCheck extends (LogicalPlan => Unit) {
  override def apply(plan: LogicalPlan): Unit = plan.foreach {
    case w: V2WriteCommand if w.outputResolved => w.table match {
      case r: DataSourceV2Relation if r.table.isInstanceOf[LanceTable] =>
        val table = r.table.asInstanceOf[LanceTable]
        val values: Seq[Expression] = w.query match {
          case p: Project => p.projectList
          case q => q.output
        }
        r.output.zip(values).foreach { case (column, value) =>
          (column.dataType, tag(value, column)) match {
            case (_: ArrayType, Some(d)) =>
              val declared = dimension(column.metadata)
              if (!declared.contains(d)) throw LanceErrors.convert(new InvalidValueException(table.tableName, column.name,
                s"the data is tagged as vectors of $d items (column metadata ${SparkTypes.VectorDimension} or ${ColumnProperties.VectorSuffix.stripPrefix(".")}), " +
                  s"and the column is ${declared.fold(s"a list (${column.dataType.sql}), not a vector")(e => s"a vector of $e items")}; " +
                  (if (declared.isEmpty) s"make the column a vector with ALTER TABLE ... SET TBLPROPERTIES " +
                    s"('${column.name}${ColumnProperties.VectorSuffix}' = '$d') or drop the tag" else "write vectors of the column's dimension")))
            case _ =>
          }
        }
      case _ =>
    }
    case _ =>
  }

  /**
   * The dimension the data's column is tagged with. Spark's write resolution may project the data
   * onto the table's columns with aliases that carry the table's metadata: the tag is then the
   * data's own, under that alias (and the cast Spark adds).
   */
  private def tag(e: Expression, column: Attribute): Option[Long] = e match {
    case a: Alias if a.metadata == column.metadata => tag(a.child, column)
    case c: Cast => tag(c.child, column)
    case n: NamedExpression => taggedDimension(n.metadata)
    case _ => None
  }

  private def dimension(m: Metadata): Option[Long] =
    if (m.contains(SparkTypes.VectorDimension)) Some(m.getLong(SparkTypes.VectorDimension)) else None

  /** The dimension a data column is tagged with: Lance's key, or lance-spark's (a number or its text). */
  private def taggedDimension(m: Metadata): Option[Long] = dimension(m).orElse {
    val key = ColumnProperties.VectorSuffix.stripPrefix(".")
    if (!m.contains(key)) None
    else scala.util.Try(m.getLong(key)).orElse(scala.util.Try(m.getString(key).trim.toLong)).toOption
  }
}
