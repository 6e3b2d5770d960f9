package sparklance.spark.indexing

import java.util.Locale
import sparklance.format.index.scalar.{BTreeIndexFiles, ScalarIndexType}
import sparklance.format.index.text.{BaseTokenizer, TextIndexParams}
import sparklance.format.index.vector.{VectorIndexType, VectorMetric}
import sparklance.format.index.vector.build.VectorIndexOptions
import sparklance.format.skipping.ZoneMapSegment

/**
 * An index a statement asks for on one top-level column. `CALL lance.system.create_index(...)`
 * and `CREATE INDEX name ON t USING kind (column) OPTIONS (...)` both come here as named options
 * of text under pylance's names, so the two accept and refuse exactly the same requests.
 */
sealed trait IndexRequest {
  def column: String
  def name: String
  /** The kind as pylance lists indices (`describe_indices`, `<table>.indices`): ZONEMAP, BTREE, IVF_PQ, ... */
  def typeName: String = this match {
    case _: IndexRequest.ZoneMap => "ZONEMAP"
    case v: IndexRequest.Vector => v.options.indexType.name
    case s: IndexRequest.Scalar => s.indexType.name
    case _: IndexRequest.Inverted => "INVERTED"
  }
  def named(name: String): IndexRequest = this match {
    case z: IndexRequest.ZoneMap => z.copy(name = name)
    case v: IndexRequest.Vector => v.copy(name = name)
    case s: IndexRequest.Scalar => s.copy(name = name)
    case i: IndexRequest.Inverted => i.copy(name = name)
  }
}

object IndexRequest {
  final case class ZoneMap(column: String, name: String, rowsPerZone: Long) extends IndexRequest
  final case class Vector(column: String, name: String, options: VectorIndexOptions) extends IndexRequest
  /** A BTREE (pages of `zoneSize` values), BITMAP or LABEL_LIST index in pylance's format. */
  final case class Scalar(column: String, name: String, indexType: ScalarIndexType, zoneSize: Int) extends IndexRequest

  /**
   * An INVERTED (full-text) index in pylance's format, tokenizing as `params` say, written as
   * `numWorkers` partitions (pylance's build option of that name; default the session's parallelism).
   */
  final case class Inverted(column: String, name: String, params: TextIndexParams, numWorkers: Option[Int]) extends IndexRequest

  /** The kind built when none is named: the zone map, the index scans skip by. */
  val ZoneMapKind = "zonemap"
  val ZoneMapOptions: Seq[String] = Seq("rows_per_zone")
  /** pylance's one option of a BTREE: the values a page holds. */
  val BTreeOptions: Seq[String] = Seq("zone_size")
  /** pylance's options of an INVERTED index that sparklance builds (see [[inverted]]). */
  val InvertedOptions: Seq[String] = Seq("base_tokenizer", "language", "with_position", "max_token_length", "lower_case",
    "stem", "remove_stop_words", "custom_stop_words", "ascii_folding", "num_workers")
  /** The names an INVERTED index is asked for by. */
  val InvertedKinds: Seq[String] = Seq("inverted", "fts")
  val VectorOptions: Seq[String] =
    Seq("metric", "num_partitions", "num_sub_vectors", "num_bits", "sample_rate", "max_iters", "target_partition_size")

  /**
   * The request for `kind` (None: a zone map) named `name` (None: `<column>_idx`) with `options`,
   * whose names are matched ignoring case. An option of another kind of index, an unknown option,
   * kind or metric, or a value that is not a number where one is needed is refused by name
   * (IllegalArgumentException, prefixed with `where`).
   */
  def parse(where: String, column: String, kind: Option[String], name: Option[String], options: Map[String, String]): IndexRequest = {
    def bad(message: String) = throw new IllegalArgumentException(s"$where: $message")
    val supplied = options.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v }
    val kindName = kind.map(_.toLowerCase(Locale.ROOT)).getOrElse(ZoneMapKind)
    val indexName = name.getOrElse(s"${column}_idx")
    def number(option: String, min: Long = Long.MinValue, max: Long = Long.MaxValue): Option[Long] = supplied.get(option).map { text =>
      val value = text.trim.toLongOption.getOrElse(bad(s"$option must be a whole number, got '$text'"))
      if (value < min || value > max) bad(s"$option = $value is out of range")
      value
    }
    def int(option: String): Option[Int] = number(option, Int.MinValue, Int.MaxValue).map(_.toInt)
    def refuseOthers(allowed: Seq[String], kindLabel: String): Unit = {
      val others = supplied.keys.filterNot(allowed.contains).toSeq.sorted
      val ofVectors = others.filter(VectorOptions.contains)
      if (ofVectors.nonEmpty) bad(s"${ofVectors.mkString(", ")} apply to vector indices (index_type IVF_FLAT, IVF_PQ or IVF_SQ), not to '$kindLabel'")
      if (others.contains("rows_per_zone")) bad(s"rows_per_zone applies to zone maps, not to $kindLabel")
      val ofInverted = others.filter(InvertedOptions.contains)
      if (ofInverted.nonEmpty) bad(s"${ofInverted.mkString(", ")} apply to INVERTED indices, not to $kindLabel")
      if (others.contains("zone_size")) bad(s"zone_size applies to BTREE indices, not to $kindLabel")
      if (others.nonEmpty) bad(s"unknown option${if (others.size > 1) "s" else ""} ${others.mkString(", ")} for a $kindLabel index " +
        (if (allowed.isEmpty) "(it takes none)" else s"(options: ${allowed.mkString(", ")})"))
    }
    VectorIndexType.find(kindName) match {
      case Some(indexType) =>
        refuseOthers(VectorOptions, indexType.name)
        val metric = supplied.get("metric").fold[VectorMetric](VectorMetric.L2)(m => VectorMetric.find(m).getOrElse(
          bad(s"unknown metric '$m' for ${indexType.name}; use l2, cosine or dot")))
        val defaults = VectorIndexOptions(indexType)
        Vector(column, indexName, VectorIndexOptions(indexType, metric, numPartitions = int("num_partitions"),
          numSubVectors = int("num_sub_vectors"), numBits = int("num_bits").getOrElse(defaults.numBits),
          sampleRate = int("sample_rate").getOrElse(defaults.sampleRate),
          maxIterations = int("max_iters").getOrElse(defaults.maxIterations),
          targetPartitionSize = number("target_partition_size")))
      case None if kindName == ZoneMapKind =>
        refuseOthers(ZoneMapOptions, ZoneMapKind)
        val rowsPerZone = number("rows_per_zone").getOrElse(ZoneMapSegment.DefaultRowsPerZone)
        if (rowsPerZone <= 0) bad(s"rows_per_zone must be positive, got $rowsPerZone")
        ZoneMap(column, indexName, rowsPerZone)
      case None if InvertedKinds.contains(kindName) =>
        refuseOthers(InvertedOptions, "INVERTED")
        Inverted(column, indexName, inverted(supplied, bad), number("num_workers", 1, 4096).map(_.toInt))
      case None => ScalarIndexType.find(kindName) match {
        case Some(ScalarIndexType.BTree) =>
          refuseOthers(BTreeOptions, ScalarIndexType.BTree.name)
          val zoneSize = number("zone_size", 1, Int.MaxValue).fold(BTreeIndexFiles.DefaultZoneSize)(_.toInt)
          Scalar(column, indexName, ScalarIndexType.BTree, zoneSize)
        case Some(other) =>
          refuseOthers(Nil, other.name)
          Scalar(column, indexName, other, BTreeIndexFiles.DefaultZoneSize)
        case None => bad(s"sparklance builds 'zonemap', 'BTREE', 'BITMAP', 'LABEL_LIST', 'INVERTED' (or 'FTS'), 'IVF_FLAT', 'IVF_PQ' and 'IVF_SQ' " +
          s"indices, not '$kindName'")
      }
    }
  }

  /**
   * The tokenizer settings of an INVERTED index from pylance's option names (defaults: pylance
   * 14.0.2's). Refused by name: a base tokenizer other than simple, whitespace or raw; a language
   * other than English while stemming or stop words are on.
   */
  private def inverted(supplied: Map[String, String], bad: String => Nothing): TextIndexParams = {
    val defaults = TextIndexParams()
    def bool(option: String, default: Boolean): Boolean = supplied.get(option).fold(default) { text =>
      text.trim.toLowerCase(Locale.ROOT) match {
        case "true" => true
        case "false" => false
        case _ => bad(s"$option must be true or false, got '$text'")
      }
    }
    val base = supplied.get("base_tokenizer").fold(defaults.baseTokenizer) { text =>
      BaseTokenizer.find(text.trim.toLowerCase(Locale.ROOT)).getOrElse(bad(s"base_tokenizer '$text' is not built by sparklance " +
        s"(it builds ${BaseTokenizer.all.map(_.name).mkString(", ")})"))
    }
    val maxTokenLength = supplied.get("max_token_length").fold(defaults.maxTokenLength) { text =>
      text.trim.toLowerCase(Locale.ROOT) match {
        case "none" | "null" => None
        case t => Some(t.toIntOption.filter(_ > 0).getOrElse(bad(s"max_token_length must be a positive whole number or none, got '$text'")))
      }
    }
    val stem = bool("stem", defaults.stem)
    val removeStopWords = bool("remove_stop_words", defaults.removeStopWords)
    val language = supplied.get("language").map(_.trim).fold(defaults.language) { l =>
      if (l.equalsIgnoreCase("english")) "English"
      else if (stem || removeStopWords) bad(s"language '$l' is not supported with stem or remove_stop_words " +
        "(sparklance stems and removes stop words in English only); set both to false")
      else l
    }
    val customStopWords = supplied.get("custom_stop_words").map { text =>
      val t = text.trim
      if (t.startsWith("[")) {
        val node = try new com.fasterxml.jackson.databind.ObjectMapper().readTree(t) catch {
          case _: Exception => bad(s"custom_stop_words is neither a JSON list of strings nor comma separated: '$text'")
        }
        if (!node.isArray) bad(s"custom_stop_words is not a JSON list of strings: '$text'")
        (0 until node.size).map(i => node.get(i)).map(n => if (n.isTextual) n.asText else bad(s"custom_stop_words holds $n, not a string"))
      } else t.split(",").map(_.trim).filter(_.nonEmpty).toSeq
    }
    TextIndexParams(base, language, maxTokenLength, bool("lower_case", defaults.lowerCase), stem, removeStopWords,
      customStopWords, bool("ascii_folding", defaults.asciiFolding), bool("with_position", defaults.withPosition))
  }
}
