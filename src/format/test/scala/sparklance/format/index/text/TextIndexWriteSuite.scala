package sparklance.format.index.text

import java.nio.charset.StandardCharsets.UTF_8
import org.scalatest.funsuite.AnyFunSuite

/** The INVERTED index writer's pieces read back by the reader's: token maps and posting blocks. */
class TextIndexWriteSuite extends AnyFunSuite {
  private def hex(b: Array[Byte]) = b.map(x => f"${x & 0xff}%02x").mkString

  private def roundTrip(keys: Seq[String]): Unit = {
    val sorted = keys.distinct.map(_.getBytes(UTF_8)).sortWith(java.util.Arrays.compareUnsigned(_, _) < 0)
    val bytes = TokenMapWriter.write(sorted, sorted.indices.map(_.toLong * 7919))
    val map = new TokenMap(bytes, "test")
    assert(map.size == sorted.size)
    sorted.zipWithIndex.foreach { case (k, i) => assert(map.get(new String(k, UTF_8)).contains(i.toLong * 7919), new String(k, UTF_8)) }
    // Absent keys: prefixes, extensions and neighbours of present ones.
    keys.take(200).foreach { k =>
      Seq(k + "\u0000", k + "zz", k.dropRight(1) + "\uffff").filterNot(keys.contains).foreach(a => assert(map.get(a).isEmpty, a))
    }
  }

  test("token maps round trip through TokenMap: prefixes, unicode, long keys, wide nodes") {
    roundTrip(Seq("a"))
    roundTrip(Seq("alpha", "beta", "delta", "ep", "gamma"))
    roundTrip(Seq("a", "ab", "abc", "abd", "b", "résumé", "straße", "日本語", "\ud83d\ude00emoji", "x" * 5000))
    roundTrip((0 until 256).map(i => new String(Array(i.toChar)) + "k")) // a root with 256 transitions (index byte)
    val r = new scala.util.Random(7)
    roundTrip(Seq.fill(20000)(r.alphanumeric.take(1 + r.nextInt(12)).mkString.toLowerCase))
  }

  test("an empty token map has no keys") {
    val map = new TokenMap(TokenMapWriter.write(Nil, Nil), "test")
    assert(map.size == 0 && map.get("a").isEmpty && map.get("").isEmpty)
  }

  test("keys out of order are refused") {
    val w = new TokenMapWriter
    w.add("b".getBytes(UTF_8), 0)
    intercept[IllegalArgumentException](w.add("a".getBytes(UTF_8), 1))
    intercept[IllegalArgumentException](w.add("b".getBytes(UTF_8), 1))
  }

  test("posting blocks decode to the postings encoded: full blocks, tails, wide deltas and frequencies") {
    val r = new scala.util.Random(3)
    for (count <- Seq(1, 5, 127, 128, 129, 256, 300, 4096, 4200)) {
      val docs = Iterator.iterate(r.nextInt(10))(_ + 1 + (if (r.nextInt(50) == 0) r.nextInt(1 << 20) else r.nextInt(4))).take(count).toArray
      val freqs = Array.fill(count)(if (r.nextInt(100) == 0) 1 + r.nextInt(100000) else 1 + r.nextInt(3))
      val lengths = Array.fill(docs.last + 1)(1 + r.nextInt(200))
      val e = PostingEncoder.encode(docs, freqs, count, lengths, 1.5f, 20f)
      val back = PostingList.decode(e.blocks.toSeq, count, "test")
      assert(back.docs.sameElements(docs) && back.freqs.sameElements(freqs), s"$count postings")
      val blocks = (count + 127) / 128
      assert(e.blocks.length == blocks && e.impacts.length == blocks + (blocks + 31) / 32)
      val scores = e.blocks.map(b => java.nio.ByteBuffer.wrap(b, 0, 4).order(java.nio.ByteOrder.LITTLE_ENDIAN).getFloat)
      assert(e.maxScore == scores.max)
      assert(scores(0) == 1.5f * (0 until math.min(128, count)).map(i => Bm25.weight(freqs(i), lengths(docs(i)), 20f)).max)
    }
  }

  test("impact entries are the ones pylance 14.0.2 wrote for the same postings") {
    def entry(postings: (Int, Int)*): String = {
      val lengths = postings.map(_._2).toArray
      hex(PostingEncoder.impactEntry(postings.indices.toArray, postings.map(_._1).toArray, lengths, 0, postings.size))
    }
    // (frequency, document length) of documents 0, 1, ...
    assert(entry(1 -> 1) == "000100")
    assert(entry(1 -> 2) == "00010102")
    assert(entry(2 -> 5) == "00010305")
    assert(entry(1 -> 100) == "00010124")
    assert(entry(995 -> 1000) == "0001c50f3f")
    assert(entry(1 -> 1, 2 -> 2) == "01020000")
    assert(entry(1 -> 1, 2 -> 3) == "0102000102")
    assert(entry(1 -> 2, 2 -> 3, 1 -> 5) == "0202010200")
    assert(entry(1 -> 2, 1 -> 3, 4 -> 5) == "020201020503")
    assert(hex(PostingEncoder.impactEntry(Array(0, 4200), Array(1, 2), Array.tabulate(4201)(i => if (i == 4200) 1 << 20 else 1), 0, 2)) ==
      "e8200200018f")
    assert(Seq(5, 7, 8, 15, 16, 100, 1000).map(PostingEncoder.quantizeLength) == Seq(5, 7, 8, 15, 16, 36, 63))
  }
  test("positions decode to the positions encoded: packed groups across documents, varint tails, several blocks") {
    val r = new scala.util.Random(5)
    for (count <- Seq(1, 3, 127, 128, 129, 300, 1000)) {
      val freqs = Array.fill(count)(if (r.nextInt(40) == 0) 1 + r.nextInt(400) else 1 + r.nextInt(3))
      // Each posting's positions ascending, some far apart (wide deltas).
      val perDoc = freqs.map(f => Iterator.iterate(r.nextInt(5))(_ + 1 + (if (r.nextInt(30) == 0) r.nextInt(1 << 18) else r.nextInt(6))).take(f).toArray)
      val (stream, offsets) = Positions.encode(freqs, count, perDoc.flatten)
      assert(offsets.length == (count + 127) / 128 && offsets.head == 0)
      val back = Positions.decode(stream, offsets.map(_.toLong), PostingList(Array.range(0, count), freqs), Positions.PackedCodec, "test")
      assert(back.map(_.toSeq).toSeq == perDoc.map(_.toSeq).toSeq, s"$count postings")
    }
  }

  test("positions are the bytes pylance 14.0.2 wrote for the same postings") {
    // Token `hello` of 302 documents: document 0 holds it at 0 and 2, the others once (at 0, then at 1).
    val freqs = Array.tabulate(302)(i => if (i == 0) 2 else 1)
    val positions = Array(0, 2, 0) ++ Array.fill(300)(1)
    val (stream, offsets) = Positions.encode(freqs, 302, positions)
    assert(hex(stream) == "02" + "545555555655555554555555" + "55" * 20 + "01" + "01" + "ff" * 16 + "01" * 46)
    assert(offsets.toSeq == Seq(0, 34, 51))
    assert(hex(Positions.encode(Array(1, 1), 2, Array(1, 2))._1) == "0102")
  }
  test("a phrase with a slop is found where pylance 14.0.2 finds it: cursors start at each token's first position") {
    // Documents of the simple tokenizer's words (positions = word index), as pylance answered
    // PhraseQuery("brown runner ran", slop=s) on them.
    val docs = Seq("brown runner ran ran", "ran x brown runner ran", "x ran brown runner ran", "x x ran brown runner ran",
      "brown runner ran x ran", "ran brown runner ran", "runner brown runner ran", "brown brown runner ran",
      "brown runner ran brown", "x x x x ran brown runner ran", "brown runner x ran", "brown runner brown ran",
      "ran a the a lazy lazy lazy running brown runner brown ran hello fox runner hello runner runner")
    def found(slop: Int) = docs.indices.filter { d =>
      val words = docs(d).split(" ")
      val at = (t: String) => words.indices.filter(words(_) == t).toArray
      Positions.holds(Seq("brown" -> 0, "runner" -> 1, "ran" -> 2), at, slop)
    }
    assert(found(0) == (0 to 9))
    assert(found(1) == Seq(0, 4, 6, 7, 8, 10, 11) && found(2) == found(1))
  }
}
