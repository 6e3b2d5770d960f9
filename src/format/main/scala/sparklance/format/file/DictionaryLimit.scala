package sparklance.format.file

import org.apache.arrow.vector.types.pojo.ArrowType
import sparklance.format.UnsupportedFeatureException
import sparklance.format.table.LogicalTypes

/**
 * The distinct values a dictionary field's indices can number in one data file. pylance reads a
 * file's pages into one Arrow dictionary array per batch, merging their dictionaries, and fails when
 * the merged items outnumber the index type ("dictionary indices use 32 bits but the declared Int8
 * key type uses 8 bits"); it refuses to write such data in 2.0. So a write that gives an int8 or
 * int16 dictionary column more distinct values in one file is refused, naming the column, rather than
 * writing a file pylance cannot read (widening the index would change the column's Arrow type).
 * Index types of 32 bits or more number more values than a file holds: nothing is tracked for them.
 */
private[format] final class DictionaryLimit(column: String, index: ArrowType.Int) {
  private val capacity = DictionaryValues.capacity(index)
  private val seen = if (capacity < Int.MaxValue) new DictionaryValues else null
  private var hasNull = false

  /** Counts a page's items (`order`: ids into `values`); `nullItem`: the page also holds a null item. */
  def add(values: DictionaryValues, order: Array[Int], nullItem: Boolean): Unit = if (seen != null) {
    order.foreach(id => seen.id(values.bytes, values.start(id), values.end(id) - values.start(id)))
    hasNull ||= nullItem
    val items = seen.size + (if (hasNull) 1 else 0)
    if (items > capacity) throw new UnsupportedFeatureException(
      s"Column '$column' is a dictionary column with ${LogicalTypes.toLogical(index)} indices, which number at most " +
        s"$capacity distinct values in a data file (a null counts as one in file format 2.0); this write gives it " +
        s"$items or more, which pylance could not read back")
  }
}
