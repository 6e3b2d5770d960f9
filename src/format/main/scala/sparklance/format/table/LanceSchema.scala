package sparklance.format.table

import com.google.protobuf.ByteString
import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import scala.jdk.CollectionConverters._
import sparklance.format.proto.FileProtos
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.file.DictionaryValues
import sparklance.format.json.Jsonb

/**
 * One field of a Lance schema: a tree node with the table-wide field id. Fixed-size lists keep
 * their item type in `arrowItemType` and have no children, as in the Lance schema.
 * `dictionary`: the index type of a dictionary-encoded field, whose `arrowType` is its value type.
 * `storedLogicalType`: the logical type as the table stores it, for a type sparklance has no Arrow
 * form of (`arrowType` is then Null, a placeholder): kept so that commits write the field back
 * unchanged, while statements that read or write the column are refused. `storedDictionary`: the
 * dictionary message of such a field that is a dictionary sparklance does not map (legacy files keep
 * the items' place in it), written back as it was.
 */
final case class LanceField(
    id: Int,
    name: String,
    arrowType: ArrowType,
    nullable: Boolean,
    children: Seq[LanceField] = Nil,
    metadata: Map[String, String] = Map.empty,
    arrowItemType: Option[ArrowType] = None,
    dictionary: Option[ArrowType.Int] = None,
    storedLogicalType: Option[String] = None,
    storedDictionary: Option[FileProtos.Dictionary] = None) {

  /** This field and its descendants in pre-order, the order of Lance's flattened schema. */
  def preOrder: Seq[LanceField] = this +: children.flatMap(_.preOrder)

  def toArrow: Field =
    // A blob v2 field's values are binary (its struct of `data` and `uri` only names the type).
    if (blobEncoding.contains(BlobEncoding.V2))
      new Field(name, new FieldType(nullable, ArrowType.LargeBinary.INSTANCE, null,
        java.util.Map.of(BlobEncoding.MetadataKey, "true")), java.util.List.of[Field]())
    else {
    val md = if (metadata.isEmpty) null else metadata.asJava
    val kids: java.util.List[Field] = arrowType match {
      case _: ArrowType.FixedSizeList =>
        java.util.List.of(new Field("item", FieldType.nullable(arrowItemType.get), null))
      case _ => children.map(_.toArrow).asJava
    }
    new Field(name, new FieldType(nullable, arrowType, null, md), kids)
    }

  def logicalType: String = storedLogicalType.getOrElse {
    val plain = if (json) Jsonb.LogicalType else LogicalTypes.toLogical(arrowType, arrowItemType,
      listOfStruct = children.headOption.exists(_.arrowType.isInstanceOf[ArrowType.Struct]) && isList)
    dictionary.fold(plain)(LogicalTypes.dictionary(plain, _))
  }

  /** Whether the field is a Lance JSON column (JSONB values, see [[Jsonb]]). */
  def json: Boolean = arrowType.isInstanceOf[ArrowType.LargeBinary] && metadata.get(BlobEncoding.ExtensionKey).contains(Jsonb.ExtensionName)

  /** Whether sparklance can decode and encode the field's values at all (see `storedLogicalType`). */
  def opaque: Boolean = preOrder.exists(_.storedLogicalType.isDefined)

  private def isList = arrowType.isInstanceOf[ArrowType.List] || arrowType.isInstanceOf[ArrowType.LargeList]

  /** How the field stores blobs, if it is one of pylance's blob columns (see [[BlobEncoding]]). */
  def blobEncoding: Option[BlobEncoding] =
    if (metadata.get(BlobEncoding.ExtensionKey).contains(BlobEncoding.V2ExtensionName)) Some(BlobEncoding.V2)
    else if (metadata.get(BlobEncoding.MetadataKey).exists(_.equalsIgnoreCase("true")) &&
      (arrowType.isInstanceOf[ArrowType.LargeBinary] || arrowType.isInstanceOf[ArrowType.Binary])) Some(BlobEncoding.V1)
    else None

  /** Whether the field is or holds a map (only file format 2.2 stores maps). */
  def holdsMap: Boolean = preOrder.exists(_.arrowType.isInstanceOf[ArrowType.Map])
}

/** A table's schema: top-level fields and the schema-level metadata. */
final case class LanceSchema(fields: Seq[LanceField], metadata: Map[String, Array[Byte]] = Map.empty) {
  def allFields: Seq[LanceField] = fields.flatMap(_.preOrder)
  def maxFieldId: Int = if (allFields.isEmpty) -1 else allFields.map(_.id).max
  def field(name: String): Option[LanceField] = fields.find(_.name == name)

  /**
   * The data files of `fragment` that hold at least one field of this schema; the others (all of
   * whose columns were dropped or superseded by a type change) are no longer read.
   */
  def filesOf(fragment: sparklance.format.proto.TableProtos.DataFragment): Seq[sparklance.format.proto.TableProtos.DataFile] = {
    val ids = allFields.map(_.id).toSet
    fragment.getFilesList.asScala.toSeq.filter(_.getFieldsList.asScala.exists(id => ids(id.intValue)))
  }

  def toArrow: Schema = new Schema(fields.map(_.toArrow).asJava,
    metadata.map { case (k, v) => k -> new String(v, UTF_8) }.asJava)

  /** Keep only the named top-level fields, in the given order. */
  def project(names: Seq[String]): LanceSchema = LanceSchema(names.map(n =>
    field(n).getOrElse(throw new IllegalArgumentException(s"No field '$n' in schema"))), metadata)

  /** The flattened, pre-order protobuf form stored in manifests and file descriptors. */
  def toProto: Seq[FileProtos.Field] = {
    def encode(f: LanceField, parent: Int): Seq[FileProtos.Field] = {
      val b = FileProtos.Field.newBuilder().setName(f.name).setId(f.id).setParentId(parent)
        .setLogicalType(f.logicalType).setNullable(f.nullable)
      f.arrowType match {
        case _ if f.storedLogicalType.isDefined =>
          f.storedDictionary.foreach(d => b.setEncoding(FileProtos.Field.Encoding.DICTIONARY).setDictionary(d))
        // As pylance records a dictionary field of a 2.x file: its values live in the data files.
        case _ if f.dictionary.isDefined =>
          b.setEncoding(FileProtos.Field.Encoding.DICTIONARY).setDictionary(FileProtos.Dictionary.getDefaultInstance)
        case _: ArrowType.Struct | _: ArrowType.Null =>
        case _: ArrowType.Utf8 | _: ArrowType.LargeUtf8 | _: ArrowType.Binary | _: ArrowType.LargeBinary =>
          b.setEncoding(FileProtos.Field.Encoding.VAR_BINARY)
        case _ => b.setEncoding(FileProtos.Field.Encoding.PLAIN)
      }
      f.metadata.foreach { case (k, v) => b.putMetadata(k, ByteString.copyFromUtf8(v)) }
      // Lance also names an extension type in the field itself (pylance's blob v2 columns).
      f.metadata.get(BlobEncoding.ExtensionKey).foreach(b.setExtensionName)
      b.build() +: f.children.flatMap(encode(_, f.id))
    }
    fields.flatMap(encode(_, -1))
  }

  def metadataProto: java.util.Map[String, ByteString] =
    metadata.map { case (k, v) => k -> ByteString.copyFrom(v) }.asJava
}

object LanceSchema {
  /** Rebuilds the tree from the flattened fields (children follow parents; parent_id -1 = top). */
  def fromProto(fields: Seq[FileProtos.Field], metadata: java.util.Map[String, ByteString]): LanceSchema = {
    val byParent = fields.groupBy(_.getParentId)
    def build(f: FileProtos.Field, seen: Set[Int]): LanceField = {
      if (seen.contains(f.getId)) throw new CorruptFileException("<schema>", s"field id ${f.getId} is its own ancestor")
      // A type sparklance cannot model stays in the schema as stored (see LanceField.storedLogicalType).
      val (arrow, item, dictionary, stored) =
        try {
          val (valueType, index) = LogicalTypes.dictionaryOf(f.getLogicalType)
          val (arrow, item) = LogicalTypes.fromLogical(valueType)
          // Dictionaries sparklance reads and writes: top-level ones of plain values whose items live
          // in the data files (2.x; legacy files keep them in the schema: offset and length).
          if (index.isDefined && (f.getParentId != -1 || !DictionaryValues.supports(arrow) ||
              f.getDictionary.getLength != 0 || f.getMetadataMap.containsKey(BlobEncoding.ExtensionKey)))
            throw new UnsupportedFeatureException(s"dictionary type ${f.getLogicalType}")
          (arrow, item, index, None)
        } catch { case _: UnsupportedFeatureException => (ArrowType.Null.INSTANCE, None, None, Some(f.getLogicalType)) }
      val kids = arrow match {
        case _: ArrowType.FixedSizeList => Nil
        case _ => byParent.getOrElse(f.getId, Nil).filter(_.getId != f.getId).map(build(_, seen + f.getId))
      }
      LanceField(f.getId, f.getName, arrow, f.getNullable, kids,
        f.getMetadataMap.asScala.map { case (k, v) => k -> v.toStringUtf8 }.toMap, item, dictionary, stored,
        if (stored.isDefined && f.hasDictionary) Some(f.getDictionary) else None)
    }
    val top = fields.filter(_.getParentId == -1).map(build(_, Set.empty))
    LanceSchema(top, metadata.asScala.map { case (k, v) => k -> v.toByteArray }.toMap)
  }

  /** Assigns field ids depth first, starting at `firstId`, as Lance does for a new schema. */
  def fromArrow(schema: Schema, firstId: Int = 0): LanceSchema = {
    var next = firstId
    def convert(f: Field): LanceField = {
      val id = next; next += 1
      val md = Option(f.getMetadata).map(_.asScala.toMap).getOrElse(Map.empty)
      f.getType match {
        case _: ArrowType.FixedSizeList =>
          LanceField(id, f.getName, f.getType, f.isNullable, Nil, md, Some(f.getChildren.get(0).getType))
        case _ =>
          LanceField(id, f.getName, f.getType, f.isNullable, f.getChildren.asScala.toSeq.map(convert), md)
      }
    }
    val fields = schema.getFields.asScala.toSeq.map(convert)
    LanceSchema(fields, Option(schema.getCustomMetadata).map(_.asScala.map { case (k, v) => k -> v.getBytes(UTF_8) }.toMap).getOrElse(Map.empty))
  }
}
