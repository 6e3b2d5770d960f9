package sparklance.format.file.v2_0

import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.types.pojo.ArrowType
import sparklance.format.UnsupportedFeatureException
import sparklance.format.file.{ContainerWriter, FixedWidth}
import sparklance.format.table.LanceField

/**
 * Writes one field and its subtree. Each field owns one file column, parents included (§3.1);
 * `columns` lists them in pre-order, which is the file's column order.
 */
private[v2_0] trait FieldEncoder {
  def columns: Seq[ColumnPages]

  /** Adds rows `[from, from + count)` of `v` to the pending page. */
  def append(v: FieldVector, from: Int, count: Int): Unit

  /** Writes the pending rows as one page in every column of the subtree (struct headers wait for `finish`). */
  def flushPage(out: ContainerWriter): Unit

  /** Writes what only the end of the file knows (struct header pages). */
  def finish(out: ContainerWriter): Unit
}

private[v2_0] object FieldEncoder {
  def apply(field: LanceField): FieldEncoder = field.arrowType match {
    case _ if field.blobEncoding.isDefined => throw new UnsupportedFeatureException(
      s"Column '${field.name}' is a blob column (lance-encoding:blob), which sparklance reads but does not write yet")
    case _ if field.dictionary.isDefined => new DictionaryEncoder(field, field.dictionary.get)
    case _: ArrowType.Struct => new StructEncoder(field, field.children.map(apply))
    case _: ArrowType.Map => throw new UnsupportedFeatureException(s"Column '${field.name}' is a map: Lance stores maps " +
      "from file format 2.2 on; this table's data files are 2.0 (create the table with data_storage_version 2.2)")
    case _: ArrowType.List | _: ArrowType.LargeList =>
      val item = field.children.headOption.getOrElse(
        throw new IllegalArgumentException(s"List field '${field.name}' has no item field"))
      new ListEncoder(apply(item))
    case _ => new LeafEncoder(valueBuilder(field.name, field.arrowType, field.arrowItemType))
  }

  private def valueBuilder(name: String, t: ArrowType, fslItem: Option[ArrowType]): ValueBuilder = t match {
    case _: ArrowType.Null => NullBuilder
    case _: ArrowType.Utf8 | _: ArrowType.LargeUtf8 | _: ArrowType.Binary | _: ArrowType.LargeBinary => new BinaryBuilder
    case f: ArrowType.FixedSizeList =>
      val item = fslItem.getOrElse(throw new IllegalArgumentException(s"Fixed-size list field '$name' has no item type"))
      val items = FixedWidth.bits(item) match {
        case Some(bits) => new NullableBuilder(new FlatBuilder(bits))
        case None => throw new UnsupportedFeatureException(
          s"Field '$name': Lance file version 2.0 cannot store a fixed_size_list of $item; only fixed-width items are supported")
      }
      new NullableBuilder(new FixedSizeListBuilder(f.getListSize, items))
    case other => FixedWidth.bits(other) match {
      case Some(bits) => new NullableBuilder(new FlatBuilder(bits))
      case None => throw new UnsupportedFeatureException(s"Field '$name': Lance file version 2.0 cannot store Arrow type $other")
    }
  }
}
