package sparklance.format.index.text

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.{LargeVarCharVector, VarCharVector}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.Random
import sparklance.format.io.LocalStorage

/**
 * A partition built from Arrow string vectors (ASCII rows split as bytes) is the partition built
 * from the same rows as Strings, byte for byte, whatever the analyzer's settings.
 */
class TextPartitionBuilderSuite extends AnyFunSuite {
  private val words = Seq("the", "The", "AND", "is", "running", "Runs", "cats", "cat's", "généralement", "Straße", "日本語",
    "\ud83d\ude00", "naïve", "x1", "2024", "½", "Ⅻ", "ﬁne", "a" * 39, "b" * 40, "C" * 41, "ab" * 30, "é" * 20, "é" * 19 + "e")
  private val separators = Seq(" ", "  ", ", ", ".", "-", "_", "\t", "\n", "\r\n", "\f", "\u000b", "!?", "'", "\u00a0", "\u3000", "/")

  /** `n` random documents: mostly ASCII (some pure ASCII, some with one odd word), some empty or blank. */
  private def documents(n: Int, seed: Long): Seq[String] = {
    val rnd = new Random(seed)
    def asciiWord(): String = {
      val alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
      val len = if (rnd.nextInt(20) == 0) 30 + rnd.nextInt(20) else 1 + rnd.nextInt(9)
      Seq.fill(len)(alphabet.charAt(rnd.nextInt(if (rnd.nextInt(4) == 0) alphabet.length else 10))).mkString
    }
    Seq.fill(n) {
      val ascii = rnd.nextInt(3) > 0
      val pieces = Seq.fill(rnd.nextInt(14)) {
        val w = rnd.nextInt(10) match {
          case 0 | 1 | 2 => asciiWord()
          case 3 | 4 => Seq("the", "and", "running", "cats", "Runs", "x1", "2024", "a" * 39, "b" * 40, "C" * 41)(rnd.nextInt(10))
          case _ => if (ascii) asciiWord() else words(rnd.nextInt(words.size))
        }
        val sep = separators(rnd.nextInt(separators.size))
        w + (if (ascii) sep.filter(_ < 0x80) else sep)
      }
      pieces.mkString
    } ++ Seq("", " ", "...", "a", "ÉTÉ", "\u0000x\u007f")
  }

  // Analyzer params, and whether the partition keeps positions.
  private val settings = Seq(
    """{}""" -> false,
    """{}""" -> true,
    """{"base_tokenizer": "whitespace"}""" -> false,
    """{"base_tokenizer": "raw"}""" -> false,
    """{"max_token_length": 5}""" -> true,
    """{"max_token_length": null, "stem": false}""" -> false,
    """{"lower_case": false, "remove_stop_words": false}""" -> false,
    """{"ascii_folding": false, "stem": false, "custom_stop_words": ["x1", "cat"]}""" -> true)

  private def files(dir: Path): Map[String, Array[Byte]] =
    Files.list(dir).iterator.asScala.map(f => f.getFileName.toString -> Files.readAllBytes(f)).toMap

  private def fill(vector: org.apache.arrow.vector.FieldVector, docs: Seq[Option[String]]): Unit = {
    vector.allocateNew()
    docs.zipWithIndex.foreach { case (d, i) => (vector, d) match {
      case (v, None) => v.setNull(i)
      case (v: VarCharVector, Some(t)) => v.setSafe(i, t.getBytes(UTF_8))
      case (v: LargeVarCharVector, Some(t)) => v.setSafe(i, t.getBytes(UTF_8))
      case (v, _) => fail(s"not a string vector: $v")
    } }
    vector.setValueCount(docs.size)
  }

  test("rows added from string vectors index as the same rows added as Strings") {
    val docs = documents(3000, seed = 35)
    assert(docs.count(_.forall(_ < 0x80)) > 1500 && docs.count(d => !d.forall(_ < 0x80)) > 500)
    val rows = docs.zipWithIndex.map { case (d, i) => if (i % 97 == 5) None else Some(d) }
    val allocator = new RootAllocator()
    try settings.foreach { case (json, withPositions) =>
      val params = s"$json, positions $withPositions"
      val analyzer = TextAnalyzer.parse(json, "test")
      val strings = new TextPartitionBuilder(analyzer, withPositions)
      rows.zipWithIndex.foreach { case (d, i) => d.foreach(strings.add(1000L + i, _)) }
      val fromVectors = Seq[org.apache.arrow.vector.FieldVector](new VarCharVector("text", allocator), new LargeVarCharVector("text", allocator)).map { vector =>
        try {
          fill(vector, rows)
          val b = new TextPartitionBuilder(analyzer, withPositions)
          rows.indices.foreach(i => b.add(1000L + i, vector, i))
          b
        } finally vector.close()
      }
      val expected = { val dir = Files.createTempDirectory("text-partition"); strings.write(LocalStorage, dir.toString, 0, allocator); files(dir) }
      assert(expected.keySet == Set("part_0_tokens.lance", "part_0_docs.lance", "part_0_invert.lance"), params)
      assert(expected("part_0_invert.lance").length > 10000, params)
      fromVectors.foreach { b =>
        assert(b.numDocs == strings.numDocs, params)
        val dir = Files.createTempDirectory("text-partition")
        b.write(LocalStorage, dir.toString, 0, allocator)
        val got = files(dir)
        assert(got.keySet == expected.keySet, params)
        got.foreach { case (name, bytes) => assert(java.util.Arrays.equals(bytes, expected(name)), s"$name differs under $params") }
      }
    } finally allocator.close()
  }

  test("postings encoded from an offset of shared arrays are the postings encoded from their own") {
    val rnd = new Random(7)
    val lengths = Array.fill(100000)(1 + rnd.nextInt(300))
    Seq(1, 127, 128, 129, 4095, 4096, 4097, 9000).foreach { count =>
      val docs = (0 until 100000).filter(_ => rnd.nextInt(8) == 0).take(count).toArray
      val freqs = Array.fill(docs.length)(1 + rnd.nextInt(if (rnd.nextBoolean()) 3 else 70))
      val pad = 1 + rnd.nextInt(500)
      def padded(a: Array[Int]) = Array.fill(pad)(rnd.nextInt(1000)) ++ a ++ Array.fill(pad)(rnd.nextInt(1000))
      val own = PostingEncoder.encode(docs, freqs, docs.length, lengths, 1.7f, 150f)
      val shared = PostingEncoder.encode(padded(docs), padded(freqs), pad, docs.length, lengths, 1.7f, 150f)
      assert(shared.maxScore == own.maxScore, count)
      assert(shared.blocks.map(_.toSeq).toSeq == own.blocks.map(_.toSeq).toSeq, count)
      assert(shared.impacts.map(_.toSeq).toSeq == own.impacts.map(_.toSeq).toSeq, count)
    }
  }

  test("a string vector of another type is refused by name") {
    val allocator = new RootAllocator()
    try {
      val v = new org.apache.arrow.vector.VarBinaryVector("blob", allocator)
      try {
        v.allocateNew(); v.setSafe(0, Array[Byte](1)); v.setValueCount(1)
        val e = intercept[IllegalArgumentException](new TextPartitionBuilder(TextAnalyzer.parse("{}", "test")).add(0L, v, 0))
        assert(e.getMessage.contains("blob") && e.getMessage.contains("not a string column"))
      } finally v.close()
    } finally allocator.close()
  }
}
