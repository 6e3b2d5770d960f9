package sparklance.format

/**
 * Arrays of primitives filled by index. Scala's `Array.tabulate` is generic and boxes every
 * element on its way into the array; these go through the JDK's primitive `Arrays.setAll`, which
 * matters on the per-row paths of readers and writers.
 */
object Primitives {
  def ints(n: Int)(f: Int => Int): Array[Int] = {
    val out = new Array[Int](n)
    java.util.Arrays.setAll(out, (i: Int) => f(i))
    out
  }

  def longs(n: Int)(f: Int => Long): Array[Long] = {
    val out = new Array[Long](n)
    java.util.Arrays.setAll(out, (i: Int) => f(i))
    out
  }
}
