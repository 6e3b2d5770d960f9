package sparklance.spark.search

import scala.util.Using
import sparklance.format.index.text.TextSearch
import sparklance.format.table.Dataset
import sparklance.hadoop.Storages
import sparklance.spark.Allocators

/**
 * A py4j-callable full-text search of a Lance table by location, for Python callers until the SQL
 * surface exists: `spark._jvm.sparklance.spark.search.TextSearchEntry.search(path, column, query, k, version)`
 * (version < 0: the latest) answers with a JSON list of `[row id, score]` pairs, best first. Runs on
 * the driver, with the storage a plain path or `file:` URI selects.
 */
object TextSearchEntry {
  def search(path: String, column: String, query: String, k: Int, version: Long): String = {
    val table = new Dataset(Storages.forPath(path), path)
    val snapshot = table.snapshot(if (version < 0) None else Some(version))
    Using.resource(Allocators.child(s"text-search-$path")) { allocator =>
      Using.resource(new TextSearch(table.storage, snapshot, column, allocator)) { search =>
        search.search(query, k).map(h => s"[${java.lang.Long.toUnsignedString(h.rowId)},${java.lang.Float.toString(h.score)}]")
          .mkString("[", ",", "]")
      }
    }
  }
}
