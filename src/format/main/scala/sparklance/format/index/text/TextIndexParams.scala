package sparklance.format.index.text

import com.fasterxml.jackson.databind.ObjectMapper
import com.google.protobuf.{ByteString, CodedOutputStream}
import java.io.ByteArrayOutputStream

/**
 * The tokenizer settings an INVERTED index is built with, under pylance's option names and with
 * pylance 14.0.2's defaults; written as the `params` JSON of `metadata.lance` and as the
 * `InvertedIndexDetails` of the manifest entry (docs/format-inverted-index.md).
 */
final case class TextIndexParams(
    baseTokenizer: BaseTokenizer = BaseTokenizer.Simple,
    language: String = "English",
    maxTokenLength: Option[Int] = Some(40),
    lowerCase: Boolean = true,
    stem: Boolean = true,
    removeStopWords: Boolean = true,
    customStopWords: Option[Seq[String]] = None,
    asciiFolding: Boolean = true,
    withPosition: Boolean = false) {

  /** The `params` JSON, keys in pylance's order. */
  def json: String = {
    val m = TextIndexParams.mapper
    def str(s: String) = m.writeValueAsString(s)
    val fields = Seq(
      "lance_tokenizer" -> str("text"), "base_tokenizer" -> str(baseTokenizer.name), "language" -> str(language),
      "with_position" -> withPosition.toString, "max_token_length" -> maxTokenLength.fold("null")(_.toString),
      "lower_case" -> lowerCase.toString, "stem" -> stem.toString, "remove_stop_words" -> removeStopWords.toString,
      "custom_stop_words" -> customStopWords.fold("null")(_.map(str).mkString("[", ",", "]")),
      "ascii_folding" -> asciiFolding.toString, "min_ngram_length" -> "3", "max_ngram_length" -> "3",
      "prefix_only" -> "false", "block_size" -> PostingList.BlockSize.toString, "split_identifiers" -> "false",
      "split_on_numerics" -> "false", "preserve_original" -> "false", "index_operators" -> "false")
    fields.map { case (k, v) => s""""$k":$v""" }.mkString("{", ",", "}")
  }

  /** The analyzer the index's readers will build from [[json]]: documents must be tokenized by the same. */
  def analyzer: TextAnalyzer = TextAnalyzer.parse(json, "being built")

  /**
   * The `InvertedIndexDetails` message pylance writes: base tokenizer (1), language as a JSON
   * string (2), with_position (3), max_token_length (4, absent for no limit), lower_case (5), stem
   * (6), remove_stop_words (7), ascii_folding (8), ngram lengths 3 and 3 (9, 10), prefix_only (11),
   * block size (12) and 2 in field 15; false and absent values left out. Custom stop words are
   * not in it (pylance keeps them in `params` only).
   */
  def details: ByteString = {
    val bytes = new ByteArrayOutputStream()
    val out = CodedOutputStream.newInstance(bytes)
    out.writeString(1, baseTokenizer.name)
    out.writeString(2, TextIndexParams.mapper.writeValueAsString(language))
    if (withPosition) out.writeBool(3, true)
    maxTokenLength.foreach(n => out.writeUInt64(4, n.toLong))
    Seq(5 -> lowerCase, 6 -> stem, 7 -> removeStopWords, 8 -> asciiFolding).foreach { case (f, v) => if (v) out.writeBool(f, true) }
    out.writeUInt32(9, 3)
    out.writeUInt32(10, 3)
    out.writeUInt32(12, PostingList.BlockSize)
    out.writeUInt32(15, 2)
    out.flush()
    ByteString.copyFrom(bytes.toByteArray)
  }
}

object TextIndexParams {
  private val mapper = new ObjectMapper()

  /**
   * The settings of an existing index from its `params` (to add a segment tokenized alike);
   * settings this writer does not write (another tokenizer, the code analyzer's flags, a block
   * size other than 128) are refused by name, `where` beginning the message.
   */
  def fromJson(json: String, where: String): TextIndexParams = {
    TextAnalyzer.parse(json, where) // refuses what the analyzer cannot tokenize
    val node = mapper.readTree(json)
    def refuse(field: String) = throw new sparklance.format.UnsupportedFeatureException(
      s"$where: $field = ${node.get(field)} is not written by sparklance")
    def get(field: String) = Option(node.get(field)).filterNot(_.isNull)
    def bool(field: String, default: Boolean) = get(field).map(_.asBoolean).getOrElse(default)
    if (get("block_size").exists(_.asInt != PostingList.BlockSize)) refuse("block_size")
    if (get("prefix_only").exists(_.asBoolean)) refuse("prefix_only")
    val defaults = TextIndexParams()
    TextIndexParams(
      baseTokenizer = get("base_tokenizer").map(n => BaseTokenizer.find(n.asText).getOrElse(refuse("base_tokenizer"))).getOrElse(defaults.baseTokenizer),
      language = get("language").map(_.asText).getOrElse(defaults.language),
      maxTokenLength = Option(node.get("max_token_length")) match {
        case None => defaults.maxTokenLength
        case Some(v) if v.isNull => None
        case Some(v) => Some(v.asInt)
      },
      lowerCase = bool("lower_case", defaults.lowerCase),
      stem = bool("stem", defaults.stem),
      removeStopWords = bool("remove_stop_words", defaults.removeStopWords),
      customStopWords = get("custom_stop_words").map(v => (0 until v.size).map(i => v.get(i).asText)),
      asciiFolding = bool("ascii_folding", defaults.asciiFolding),
      withPosition = bool("with_position", defaults.withPosition))
  }
}
