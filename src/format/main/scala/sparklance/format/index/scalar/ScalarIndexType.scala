package sparklance.format.index.scalar

import java.util.Locale
import sparklance.format.proto.TableProtos.IndexMetadata

/**
 * The scalar indices sparklance builds in pylance's formats (docs/format-scalar-indices.md), named
 * as pylance names them in `create_scalar_index`, with the type URL of their (empty) details
 * message and the `index_version` pylance 14 records for them on tables without stable row ids.
 */
sealed abstract class ScalarIndexType(val name: String, val typeUrlSuffix: String, val indexVersion: Int)

object ScalarIndexType {
  /** Every value with its row address, sorted by value, in pages of `zone_size` rows. */
  case object BTree extends ScalarIndexType("BTREE", "lance.table.BTreeIndexDetails", 0)
  /** One row address bitmap a distinct value. */
  case object Bitmap extends ScalarIndexType("BITMAP", "lance.table.BitmapIndexDetails", 0)
  /** A bitmap over the elements of a list column, plus the rows whose list is null. */
  case object LabelList extends ScalarIndexType("LABEL_LIST", "lance.table.LabelListIndexDetails", 1)

  val all: Seq[ScalarIndexType] = Seq(BTree, Bitmap, LabelList)

  def find(name: String): Option[ScalarIndexType] = all.find(_.name == name.toUpperCase(Locale.ROOT))

  /** The type of a segment, by its details' type URL; None for other indices. */
  def of(index: IndexMetadata): Option[ScalarIndexType] = all.find(t => index.getIndexDetails.getTypeUrl.endsWith(t.typeUrlSuffix))
}
