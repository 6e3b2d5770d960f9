package sparklance.format.json

import org.scalatest.funsuite.AnyFunSuite

/**
 * The JSONB codec against the bytes pylance 14.0.2 wrote: each text was written to a `pa.json_()`
 * column (`lance.write_dataset`, file version 2.1), the data file's raw large_binary values read
 * with `LanceFileReader`, and the table read back with `to_table()` (the third string).
 */
class JsonbSuite extends AnyFunSuite {
  private val pylance: Seq[(String, String, String)] = Seq(
    ("{\"b\":1,\"a\":[1,2.5,\"x\"]}", "4000000210000001100000015000001c200000026162800000032000000220000009100000015001604004000000000000785001", "{\"a\":[1,2.5,\"x\"],\"b\":1}"),
    ("null", "2000000000000000", "null"),
    ("true", "2000000040000000", "true"),
    ("false", "2000000030000000", "false"),
    ("0", "200000002000000100", "0"),
    ("-0", "200000002000000100", "0"),
    ("1", "20000000200000025001", "1"),
    ("-1", "200000002000000240ff", "-1"),
    ("255", "200000002000000250ff", "255"),
    ("256", "2000000020000003500100", "256"),
    ("-129", "200000002000000340ff7f", "-129"),
    ("70000", "20000000200000055000011170", "70000"),
    ("-2147483649", "200000002000000940ffffffff7fffffff", "-2147483649"),
    ("18446744073709551615", "200000002000000950ffffffffffffffff", "18446744073709551615"),
    ("18446744073709551616", "20000000200000096043f0000000000000", "1.8446744073709552e+19"),
    ("-9223372036854775808", "2000000020000009408000000000000000", "-9223372036854775808"),
    ("-9223372036854775809", "200000002000000960c3e0000000000000", "-9.223372036854776e+18"),
    ("1.5", "2000000020000009603ff8000000000000", "1.5"),
    ("0.0", "2000000020000009600000000000000000", "0.0"),
    ("-0.0", "2000000020000009608000000000000000", "-0.0"),
    ("1e3", "200000002000000960408f400000000000", "1000.0"),
    ("1E-7", "2000000020000009603e7ad7f29abcaf48", "1e-7"),
    ("123456789.123456789", "200000002000000960419d6f34547e6b75", "123456789.12345679"),
    ("1e300", "2000000020000009607e37e43c8800759c", "1e+300"),
    ("2.5e-320", "20000000200000096000000000000013c4", "2.5e-320"),
    ("\"a\\\"b\\\\c\\n\\u0001\\u00e9\\ud83d\\ude00/\\t\\b\\f\\r\"", "20000000100000126122625c630a01c3a9f09f98802f09080c0d", "\"a\\\"b\\\\c\\n\\u0001é😀/\\t\\b\\f\\r\""),
    ("[]", "80000000", "[]"),
    ("{}", "40000000", "{}"),
    ("[null,[{}],{\"x\":[]}]", "80000003000000005000000c500000118000000150000004400000004000000110000001500000047880000000", "[null,[{}],{\"x\":[]}]"),
    ("{\"é\":1,\"z\":2,\"Z\":3,\"aa\":4,\"a\":5,\"\":6}", "400000061000000010000001100000011000000210000001100000022000000220000002200000022000000220000002200000025a6161617ac3a9500650035005500450025001", "{\"\":6,\"Z\":3,\"a\":5,\"aa\":4,\"z\":2,\"é\":1}"),
    (" { \"k\" : [ 1 , 2 ] } ", "4000000110000001500000106b80000002200000022000000250015002", "{\"k\":[1,2]}"),
    ("100000000000000000000000000000000000000000", "20000000200000096048725dfa371a19e7", "1e+41"),
    ("0.1", "2000000020000009603fb999999999999a", "0.1"),
    ("3.141592653589793", "200000002000000960400921fb54442d18", "3.141592653589793"),
    ("1e21", "200000002000000960444b1ae4d6e2ef50", "1e+21"),
    ("1e15", "200000002000000960430c6bf526340000", "1000000000000000.0"),
    ("1e16", "2000000020000009604341c37937e08000", "1e+16"),
    ("0.001234", "2000000020000009603f5437c5692b3cc5", "0.001234"),
    ("0.000001", "2000000020000009603eb0c6f7a0b5ed8d", "1e-6"),
    ("-65536", "200000002000000540ffff0000", "-65536"),
    ("4294967296", "2000000020000009500000000100000000", "4294967296"),
    ("[true,false,\"\",-1.25e-10]", "800000044000000030000000100000002000000960bde12e0be826d695", "[true,false,\"\",-1.25e-10]")
  )

  private def hex(b: Array[Byte]): String = b.map(x => f"${x & 0xFF}%02x").mkString

  test("encode writes the bytes pylance writes") {
    pylance.foreach { case (text, bytes, _) => assert(hex(Jsonb.encode(text)) == bytes, text) }
  }

  test("decode reads back the text pylance reads back") {
    pylance.foreach { case (text, bytes, back) =>
      val raw = bytes.grouped(2).map(Integer.parseInt(_, 16).toByte).toArray
      assert(Jsonb.decode(raw) == back, text)
      // and the text read back encodes to the same bytes
      assert(hex(Jsonb.encode(back)) == bytes, back)
    }
  }

  test("numbers beyond a double's range: infinities (read back as null) and signed zeros, as pylance stores them") {
    Seq(("1e400", "200000002000000120", "null"), ("-1E+400", "200000002000000130", "null"),
      ("[1e400]", "800000012000000120", "[null]"), ("1e-400", "2000000020000009600000000000000000", "0.0"),
      ("-1e-400", "2000000020000009608000000000000000", "-0.0")).foreach { case (text, bytes, back) =>
      assert(hex(Jsonb.encode(text)) == bytes, text)
      assert(Jsonb.decode(bytes.grouped(2).map(Integer.parseInt(_, 16).toByte).toArray) == back, text)
    }
  }

  test("text that is not standard JSON is refused by name") {
    Seq("", "{\"a\":1,\"a\":2}", "+1", "NaN", "[1,]", "'x'", "01", ".5", "1.", "[1", "{\"a\" 1}", "\"\\x\"", "\"\\ud800\"",
      "tru", "1 2", "\"a\u0001\"").foreach { bad =>
      val e = intercept[Jsonb.JsonbException](Jsonb.encode(bad))
      assert(e.getMessage.contains("JSON"), bad)
    }
  }

  test("damaged JSONB is refused, not misread") {
    Seq("", "2000000020", "80000002500000ff", "2000000060000000", "200000002000000970").foreach { h =>
      val raw = h.grouped(2).map(Integer.parseInt(_, 16).toByte).toArray
      intercept[Jsonb.JsonbException](Jsonb.decode(raw))
    }
  }

  test("doubles print as pylance prints them (checked with pylance 14.0.2)") {
    Seq(1e15 -> "1000000000000000.0", 1e16 -> "1e+16", 0.0001 -> "0.0001", 0.00001 -> "0.00001", -2.5 -> "-2.5",
      123.456 -> "123.456", 1.7976931348623157e308 -> "1.7976931348623157e+308", 5e-324 -> "5e-324").foreach {
      case (d, s) => assert(Jsonb.formatDouble(d) == s, d)
    }
  }
}
