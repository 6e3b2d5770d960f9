package sparklance.spark

import org.apache.spark.sql.types._
import sparklance.format.table.BlobEncoding

/**
 * Column declarations Spark's DDL has no words for, given as table properties of CREATE TABLE,
 * CTAS, REPLACE and `writeTo(...).tableProperty(...).create()`:
 *  - `<column>.arrow.fixed-size-list.size` = d: the ARRAY column is a Lance vector of d items;
 *  - `<column>.lance.encoding` = `blob`: the BINARY column is a blob column;
 *  - `not_null_columns` = 'id, s.b': these columns are NOT NULL (CTAS and `writeTo().create()`
 *    make every column nullable, and a NULL in one of them fails the write).
 * The first two are lance-spark's spelling. A `<column>` is a top-level column or a field of a
 * struct (`s.emb`). They become the new table's schema (the column metadata of [[SparkTypes]]
 * and its nullability), not stored keys; a table's properties show the first two again, derived
 * from its schema, so that SHOW CREATE TABLE prints a statement that makes the same table.
 */
object ColumnProperties {
  val VectorSuffix = ".arrow.fixed-size-list.size"
  val EncodingSuffix = ".lance.encoding"
  val BlobEncodingValue = "blob"
  val NotNullColumns = "not_null_columns"

  /** Whether `key` declares a column (and so is not a table property to store). */
  def isColumnKey(key: String): Boolean =
    key == NotNullColumns || Seq(VectorSuffix, EncodingSuffix).exists(s => key.endsWith(s) && key.length > s.length)

  /** `schema` with the declarations among `props` applied, and the other properties. */
  def apply(table: String, schema: StructType, props: Map[String, String]): (StructType, Map[String, String]) = {
    val (declarations, rest) = props.partition { case (k, _) => isColumnKey(k) }
    val declared = declarations.toSeq.sortBy(_._1).foldLeft(schema) { case (s, (key, value)) => declare(table, s, key, value) }
    (declared, rest)
  }

  private def declare(table: String, schema: StructType, key: String, value: String): StructType = {
    def fail(detail: String) = throw new InvalidTablePropertyException(table, key, detail)
    if (key == NotNullColumns) {
      val names = value.split(',').map(_.trim).filter(_.nonEmpty)
      if (names.isEmpty) fail("must name columns separated by commas, e.g. 'id, name'")
      names.foldLeft(schema)((s, name) => update(table, key, s, name.split('.').toSeq)(_.copy(nullable = false)))
    } else if (key.endsWith(VectorSuffix)) {
      val dim = value.trim.toIntOption.filter(_ > 0).getOrElse(fail(s"must be a positive number of items (a vector's dimension), got '$value'"))
      update(table, key, schema, key.stripSuffix(VectorSuffix).split('.').toSeq) { f =>
        f.dataType match {
          case ArrayType(_: NumericType, _) =>
            f.copy(metadata = new MetadataBuilder().withMetadata(f.metadata).putLong(SparkTypes.VectorDimension, dim).build())
          case other => fail(s"makes column '${f.name}' a vector, which needs an ARRAY of numbers, and it is ${other.sql}")
        }
      }
    } else {
      if (!value.trim.equalsIgnoreCase(BlobEncodingValue)) fail(s"must be '$BlobEncodingValue' (the only column encoding a property chooses), got '$value'")
      update(table, key, schema, key.stripSuffix(EncodingSuffix).split('.').toSeq) { f =>
        if (f.dataType != BinaryType) fail(s"makes column '${f.name}' a blob column, which needs BINARY, and it is ${f.dataType.sql}")
        f.copy(metadata = new MetadataBuilder().withMetadata(f.metadata).putString(BlobEncoding.MetadataKey, "true").build())
      }
    }
  }

  /**
   * The top-level column (its name in `schema`) and the dimension a vector key of ALTER TABLE SET
   * TBLPROPERTIES makes it, checked as CREATE TABLE checks the key (see [[TableAlteration]]).
   */
  def vectorColumn(table: String, schema: StructType, key: String, value: String): (String, Int) = {
    val path = key.stripSuffix(VectorSuffix).split('.').toSeq
    if (path.size > 1) throw new InvalidTablePropertyException(table, key,
      "names a field inside a struct; only a top-level column of an existing table becomes a vector")
    val declared = declare(table, schema, key, value)
    val at = schema.fields.indices.find(i => declared.fields(i) != schema.fields(i)).getOrElse(
      schema.fields.indexWhere(f => org.apache.spark.sql.internal.SQLConf.get.resolver(f.name, path.head)))
    (schema.fields(at).name, value.trim.toInt)
  }

  /** `schema` with the field at `path` (a top-level column or struct fields, names as Spark resolves them) changed. */
  private def update(table: String, key: String, schema: StructType, path: Seq[String])(change: StructField => StructField): StructType = {
    val resolver = org.apache.spark.sql.internal.SQLConf.get.resolver
    def in(struct: StructType, rest: Seq[String], done: Seq[String]): StructType = {
      val i = struct.fields.indexWhere(f => resolver(f.name, rest.head))
      if (i < 0) throw new InvalidTablePropertyException(table, key, s"names column '${(done :+ rest.head).mkString(".")}', " +
        s"which the table does not have; its ${if (done.isEmpty) "columns" else s"struct ${done.mkString(".")}'s fields"} are " +
        struct.fieldNames.mkString(", "))
      val f = struct.fields(i)
      val changed = if (rest.size == 1) change(f) else f.dataType match {
        case s: StructType => f.copy(dataType = in(s, rest.tail, done :+ f.name))
        case other => throw new InvalidTablePropertyException(table, key,
          s"names a field inside '${(done :+ f.name).mkString(".")}', which is ${other.sql}, not a STRUCT")
      }
      StructType(struct.fields.updated(i, changed))
    }
    in(schema, path, Nil)
  }

  /** The properties that declare `schema`'s vector and blob columns (those in structs too), as CREATE TABLE takes them. */
  def describe(schema: StructType): Map[String, String] = {
    def of(fields: Seq[StructField], prefix: String): Seq[(String, String)] = fields.flatMap { f =>
      val path = prefix + f.name
      val own =
        if (f.metadata.contains(SparkTypes.VectorDimension)) Seq(path + VectorSuffix -> f.metadata.getLong(SparkTypes.VectorDimension).toString)
        else if (f.metadata.contains(BlobEncoding.MetadataKey)) Seq(path + EncodingSuffix -> BlobEncodingValue)
        else Nil
      own ++ (f.dataType match {
        case s: StructType => of(s.fields.toSeq, path + ".")
        case _ => Nil
      })
    }
    of(schema.fields.toSeq, "").toMap
  }
}
