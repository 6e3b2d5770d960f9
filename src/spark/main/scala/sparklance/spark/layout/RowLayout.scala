package sparklance.spark.layout

/**
 * How a rewrite orders a table's rows so that zone maps skip: by the columns' values one after
 * the other (`Linear`, for filters on the first column), or along a space-filling curve through
 * their value ranks (`Curved`, Z-order or Hilbert, for filters on any of them).
 */
sealed trait RowLayout {
  def columns: Seq[String]
  def describe: String
}

object RowLayout {
  final case class Linear(columns: Seq[String]) extends RowLayout {
    def describe: String = s"sorted by ${columns.mkString(", ")}"
  }
  final case class Curved(curve: Curve, columns: Seq[String]) extends RowLayout {
    def describe: String = s"ordered along a $curve curve through ${columns.mkString(", ")}"
  }

  /** The layout a table clustered by `columns` keeps: linear for one column, a Hilbert curve for several (as Delta's liquid clustering). */
  def clustered(columns: Seq[String]): RowLayout = if (columns.size == 1) Linear(columns) else Curved(Curve.Hilbert, columns)

  /** `count` boundaries at evenly spaced quantiles of `sorted` values (fewer when values repeat). */
  def quantiles(sorted: IndexedSeq[Any], count: Int, ordering: Ordering[Any]): Array[Any] = {
    if (sorted.isEmpty) return Array.empty
    val picked = (1 to count).map(j => sorted(math.min(sorted.size - 1, (j.toLong * sorted.size / (count + 1)).toInt)))
    picked.foldLeft(Vector.empty[Any])((acc, v) => if (acc.nonEmpty && ordering.equiv(acc.last, v)) acc else acc :+ v).toArray
  }

  /** Column names from a comma-separated list, as the procedures and properties take them. */
  def names(list: String): Seq[String] = list.split(',').map(_.trim).filter(_.nonEmpty).toSeq
}
