package sparklance.format.index.text

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import java.nio.charset.StandardCharsets.UTF_8
import java.util.Locale
import org.apache.lucene.analysis.miscellaneous.ASCIIFoldingFilter
import org.tartarus.snowball.ext.EnglishStemmer
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import sparklance.format.UnsupportedFeatureException

/** How text becomes tokens: the base tokenizer of an index's `params`. */
sealed abstract class BaseTokenizer(val name: String)
object BaseTokenizer {
  /** Maximal runs of alphanumeric characters (Unicode Alphabetic or Numeric). */
  case object Simple extends BaseTokenizer("simple")
  /** Runs of characters other than ASCII whitespace. */
  case object Whitespace extends BaseTokenizer("whitespace")
  /** The whole text, one token. */
  case object Raw extends BaseTokenizer("raw")

  val all: Seq[BaseTokenizer] = Seq(Simple, Whitespace, Raw)
  def find(name: String): Option[BaseTokenizer] = all.find(_.name == name)
}

/**
 * The analyzer of an INVERTED index, from the `params` JSON of its `metadata.lance`: base
 * tokenizer, then dropping tokens of `maxTokenLength` UTF-8 bytes or more, lower case, the
 * Snowball stemmer, stop words (compared with the stemmed token), ASCII folding, in Lance's order
 * (docs/format-inverted-index.md). English only.
 */
final case class TextAnalyzer(base: BaseTokenizer, maxTokenLength: Option[Int], lowerCase: Boolean, stem: Boolean,
    stopWords: Option[Set[String]], asciiFolding: Boolean) {

  /** The tokens of `text`, repeats kept, in order. */
  def tokens(text: String): Seq[String] = {
    val out = ArrayBuffer.empty[String]
    foreachToken(text, new EnglishStemmer)(out += _)
    out.toSeq
  }

  /**
   * Calls `each` with every token of `text`, in order: how an index build tokenizes, with one
   * `stemmer` (not thread safe) for all the documents of a task.
   */
  def foreachToken(text: String, stemmer: EnglishStemmer)(each: String => Unit): Unit =
    foreachPositioned(text, stemmer)((t, _) => each(t))

  /**
   * The token a piece of text the base tokenizer cut out becomes, null when it is dropped (too
   * long, or a stop word). It depends on the piece alone, so a build may remember it.
   */
  def analyze(raw: String, stemmer: EnglishStemmer): String = {
    var t = raw
    if (maxTokenLength.exists(TextAnalyzer.utf8Length(t) >= _)) return null
    if (lowerCase) t = t.toLowerCase(Locale.ROOT)
    if (stem) { stemmer.setCurrent(t); stemmer.stem(); t = stemmer.getCurrent }
    if (stopWords.exists(_.contains(t))) return null
    if (asciiFolding) TextAnalyzer.fold(t) else t
  }

  /**
   * Calls `each` with the start and end of every piece of `text` the base tokenizer cuts out,
   * before [[analyze]]: a build looks pieces up without cutting them out.
   */
  def foreachPiece(text: String)(each: (Int, Int) => Unit): Unit = TextAnalyzer.splitRanges(base, text)(each)

  /**
   * The tokens of `text` with their positions, in order: a token's position is the index of the
   * base tokenizer's token it comes from, so a token the chain drops (too long, a stop word) leaves
   * a gap, as Lance's positions do (phrase queries compare them).
   */
  def positioned(text: String): Seq[(String, Int)] = {
    val out = ArrayBuffer.empty[(String, Int)]
    foreachPositioned(text, new EnglishStemmer)((t, p) => out += (t -> p))
    out.toSeq
  }

  private def foreachPositioned(text: String, stemmer: EnglishStemmer)(each: (String, Int) => Unit): Unit = {
    var position = 0
    TextAnalyzer.splitEach(base, text) { raw =>
      val t = analyze(raw, stemmer)
      if (t != null) each(t, position)
      position += 1
    }
  }
}

object TextAnalyzer {
  private val json = new ObjectMapper()

  /** The analyzer `params` describe; an option this reader does not implement is refused by name. */
  def parse(params: String, where: String): TextAnalyzer = {
    val node = try json.readTree(params) catch {
      case e: Exception => throw new UnsupportedFeatureException(s"INVERTED index $where: params are not JSON: $params")
    }
    def refuse(field: String, value: String) =
      throw new UnsupportedFeatureException(s"INVERTED index $where: $field = $value is not supported by sparklance's reader")
    def text(field: String, default: String): String = Option(node.get(field)).filterNot(_.isNull).map(_.asText).getOrElse(default)
    def bool(field: String, default: Boolean): Boolean = Option(node.get(field)).filterNot(_.isNull).map { v =>
      if (!v.isBoolean) refuse(field, v.toString) else v.asBoolean
    }.getOrElse(default)
    val known = Set("lance_tokenizer", "base_tokenizer", "language", "with_position", "max_token_length", "lower_case",
      "stem", "remove_stop_words", "custom_stop_words", "ascii_folding", "min_ngram_length", "max_ngram_length",
      "prefix_only", "block_size", "split_identifiers", "split_on_numerics", "preserve_original", "index_operators",
      "json_tokenizer_mode", "disable_cross_array_unnest", "max_sub_docs_per_row", "max_sub_docs_per_row_exceed_action")
    node.fieldNames().asScala.find(f => !known.contains(f)).foreach(f => refuse(f, node.get(f).toString))
    text("lance_tokenizer", "text") match { case "text" => case other => refuse("lance_tokenizer", other) }
    val base = { val name = text("base_tokenizer", "simple"); BaseTokenizer.find(name).getOrElse(refuse("base_tokenizer", name)) }
    // Flags of the code analyzer: Lance refuses them with a text tokenizer, so anything but false is foreign.
    Seq("split_identifiers", "split_on_numerics", "preserve_original", "index_operators")
      .foreach(f => if (bool(f, false)) refuse(f, "true"))
    val stem = bool("stem", true)
    val removeStopWords = bool("remove_stop_words", true)
    if ((stem || removeStopWords) && text("language", "English") != "English") refuse("language", text("language", ""))
    val custom = Option(node.get("custom_stop_words")).filterNot(_.isNull).map { v =>
      if (!v.isArray) refuse("custom_stop_words", v.toString)
      v.elements().asScala.map(_.asText).toSet
    }
    val maxLen = Option(node.get("max_token_length")) match {
      case None => Some(40)
      case Some(v) if v.isNull => None
      case Some(v) if v.canConvertToInt && v.asInt > 0 => Some(v.asInt)
      case Some(v) => refuse("max_token_length", v.toString)
    }
    TextAnalyzer(base, maxLen, bool("lower_case", true), stem,
      if (removeStopWords) Some(custom.getOrElse(EnglishStopWords)) else None, bool("ascii_folding", true))
  }

  /** The UTF-8 byte length of `s`, without encoding it. */
  private[text] def utf8Length(s: String): Int = {
    var n = 0
    var i = 0
    while (i < s.length) {
      val c = s.charAt(i)
      if (c < 0x80) n += 1
      else if (c < 0x800) n += 2
      else if (Character.isHighSurrogate(c) && i + 1 < s.length && Character.isLowSurrogate(s.charAt(i + 1))) { n += 4; i += 1 }
      else n += 3
      i += 1
    }
    n
  }

  private def isAlphanumeric(cp: Int): Boolean = Character.isAlphabetic(cp) || (Character.getType(cp) match {
    case Character.DECIMAL_DIGIT_NUMBER | Character.LETTER_NUMBER | Character.OTHER_NUMBER => true
    case _ => false
  })

  private def isAsciiWhitespace(cp: Int): Boolean = cp == ' ' || cp == '\t' || cp == '\n' || cp == '\f' || cp == '\r'

  private val simpleAscii = Array.tabulate(128)(c => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
  private val whitespaceAscii = Array.tabulate(128)(c => !isAsciiWhitespace(c))

  /**
   * For each ASCII character, whether the base tokenizer keeps it in a piece (else it ends one):
   * one table for the String splitter and the byte splitter of a build, so they cut ASCII text
   * alike. Null for the raw tokenizer, which does not split.
   */
  private[text] def asciiKept(base: BaseTokenizer): Array[Boolean] = base match {
    case BaseTokenizer.Simple => simpleAscii
    case BaseTokenizer.Whitespace => whitespaceAscii
    case BaseTokenizer.Raw => null
  }

  private[text] def split(base: BaseTokenizer, text: String): Seq[String] = {
    val out = ArrayBuffer.empty[String]
    splitEach(base, text)(out += _)
    out.toSeq
  }

  /** Calls `each` with the pieces of `text` the base tokenizer cuts out, in order. */
  private[text] def splitEach(base: BaseTokenizer, text: String)(each: String => Unit): Unit =
    splitRanges(base, text)((start, end) => each(text.substring(start, end)))

  /** Calls `each` with the start and end of the pieces of `text` the base tokenizer cuts out, in order. */
  private[text] def splitRanges(base: BaseTokenizer, text: String)(each: (Int, Int) => Unit): Unit = base match {
    case BaseTokenizer.Raw => each(0, text.length)
    case _ =>
      val simple = base == BaseTokenizer.Simple
      val ascii = asciiKept(base)
      var start = -1
      var i = 0
      while (i < text.length) {
        val c = text.charAt(i)
        // ASCII decided without a code point look-up: most text is ASCII.
        var keep = true
        var width = 1
        if (c < 0x80) keep = ascii(c)
        else { val cp = text.codePointAt(i); width = Character.charCount(cp); keep = !simple || isAlphanumeric(cp) }
        if (keep) { if (start < 0) start = i }
        else if (start >= 0) { each(start, i); start = -1 }
        i += width
      }
      if (start >= 0) each(start, text.length)
  }

  private def fold(t: String): String = {
    if (t.forall(_ < 0x80)) t
    else {
      val in = t.toCharArray
      val out = new Array[Char](in.length * 4)
      val n = ASCIIFoldingFilter.foldToASCII(in, 0, out, 0, in.length)
      new String(out, 0, n)
    }
  }

  /** Lance's English stop words (found by indexing 62,000 words with pylance 14.0.2). */
  val EnglishStopWords: Set[String] = {
    val in = getClass.getResourceAsStream("english-stop-words.txt")
    if (in == null) throw new IllegalStateException("english-stop-words.txt is missing from the jar")
    try scala.io.Source.fromInputStream(in, "UTF-8").getLines().map(_.trim).filter(_.nonEmpty).toSet finally in.close()
  }
}
