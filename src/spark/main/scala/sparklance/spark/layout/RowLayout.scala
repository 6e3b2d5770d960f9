package sparklance.spark.layout

/**
 * How a rewrite orders a table's rows so that zone maps skip: by the columns' values one after
 * the other (`Linear`, for filters on the first column), or along a Z-order curve through their
 * value ranks (`ZOrder`, for filters on any of them).
 */
sealed trait RowLayout {
  def columns: Seq[String]
  def describe: String
}

object RowLayout {
  final case class Linear(columns: Seq[String]) extends RowLayout {
    def describe: String = s"sorted by ${columns.mkString(", ")}"
  }
  final case class ZOrder(columns: Seq[String]) extends RowLayout {
    def describe: String = s"Z-ordered by ${columns.mkString(", ")}"
  }

  /** The layout a table clustered by `columns` keeps: linear for one column, Z-order for several. */
  def clustered(columns: Seq[String]): RowLayout = if (columns.size == 1) Linear(columns) else ZOrder(columns)

  /** Column names from a comma-separated list, as the procedures and properties take them. */
  def names(list: String): Seq[String] = list.split(',').map(_.trim).filter(_.nonEmpty).toSeq
}
