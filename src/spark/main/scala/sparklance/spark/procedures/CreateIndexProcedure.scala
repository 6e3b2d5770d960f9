package sparklance.spark.procedures

import java.util.Locale
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.spark.LanceCatalog
import sparklance.spark.indexing.{IndexRequest, TableIndexes}

/**
 * `CALL lance.system.create_index(table => 'db.t', column => 'c', type => 'zonemap', name => 'c_idx',
 * rows_per_zone => 8192)`: builds a ZONEMAP index over every live row of the table's top-level
 * column `c`, one Spark task a fragment, and commits it as a Lance CreateIndex that pylance reads
 * and uses as its own. An index of the same name is replaced. Scans then skip the zones a filter
 * on `c` rules out; fragments written later are read whole until the index is built again.
 *
 * `index_type => 'IVF_FLAT' | 'IVF_PQ' | 'IVF_SQ'` (or `type`) on a vector column builds a vector
 * index in pylance's format, with pylance's option names: `metric` (l2, cosine, dot),
 * `num_partitions`, `num_sub_vectors` (required for IVF_PQ), `num_bits` (8), `sample_rate`,
 * `max_iters`, `target_partition_size` (see [[sparklance.spark.indexing.VectorIndexJob]]).
 * `index_type => 'BTREE' | 'BITMAP' | 'LABEL_LIST'` builds those scalar indices in pylance's format
 * (a BTREE takes pylance's `zone_size`, the values a page holds, 4096 by default; LABEL_LIST is for
 * array columns, answering array_has_any / array_has_all in pylance), see
 * [[sparklance.spark.indexing.ScalarIndexJob]].
 * CREATE INDEX builds the same indices (see [[sparklance.spark.LanceTable]]).
 */
final class CreateIndexProcedure(catalog: LanceCatalog) extends LanceProcedure(catalog) {
  override def name(): String = CreateIndexProcedure.Name
  override def description(): String = "Builds a zone map, BTREE, BITMAP, LABEL_LIST, INVERTED or IVF vector index on a column of a table"

  override def parameters(): Array[ProcedureParameter] =
    Array(param("table", StringType, required = true), param("column", StringType, required = true),
      param("type", StringType), param("name", StringType), param("rows_per_zone", LongType),
      param("index_type", StringType), param("metric", StringType), param("num_partitions", LongType),
      param("num_sub_vectors", LongType), param("num_bits", LongType), param("sample_rate", LongType),
      param("max_iters", LongType), param("target_partition_size", LongType), param("zone_size", LongType),
      // INVERTED (full-text) options, under pylance's names; max_token_length as text ('none' for no limit).
      param("base_tokenizer", StringType), param("language", StringType), param("with_position", BooleanType),
      param("max_token_length", StringType), param("lower_case", BooleanType), param("stem", BooleanType),
      param("remove_stop_words", BooleanType), param("custom_stop_words", StringType), param("ascii_folding", BooleanType),
      param("num_workers", LongType))

  override def resultSchema: StructType = StructType(Seq(
    StructField("name", StringType, nullable = false), StructField("index_type", StringType, nullable = false),
    StructField("fragments", LongType, nullable = false), StructField("zones", LongType, nullable = true),
    StructField("segments", LongType, nullable = false), StructField("version", LongType, nullable = false)))

  override protected def run(args: InternalRow): InternalRow = {
    val target = table(args, 0)
    val where = s"Procedure create_index of ${target.quotedName}"
    val named = Seq(optional(args, 2)(args.getUTF8String), optional(args, 5)(args.getUTF8String)).flatten.map(_.toString)
    if (named.map(_.toLowerCase(Locale.ROOT)).distinct.size > 1) throw new IllegalArgumentException(
      s"$where: type and index_type disagree (${named.mkString(" and ")}); give one")
    // The options given, as text under their names: one parser for this call and CREATE INDEX.
    val options = (Seq(4) ++ (6 until parameters().length)).filterNot(args.isNullAt).map { i =>
      val p = parameters()(i)
      p.name() -> (p.dataType() match {
        case StringType => args.getUTF8String(i).toString
        case BooleanType => args.getBoolean(i).toString
        case _ => args.getLong(i).toString
      })
    }.toMap
    val name = optional(args, 3)(args.getUTF8String).map(_.toString)
    val request = IndexRequest.parse(where, args.getUTF8String(1).toString, named.headOption, name, options)
    val built = new TableIndexes(target.quotedName, target.dataset, catalog.settingsForTasks)
      .create(spark, request, replace = true, where, nameGiven = name.isDefined)
    InternalRow(UTF8String.fromString(built.name), UTF8String.fromString(built.indexType), built.fragments,
      built.zones.map(Long.box).orNull, built.segments, built.version)
  }
}

object CreateIndexProcedure {
  val Name = "create_index"
}
