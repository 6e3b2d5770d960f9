package sparklance.spark

import org.apache.arrow.memory.{BufferAllocator, RootAllocator}

/** One Arrow root allocator per JVM; each task takes a child so leaks are attributed and freed. */
object Allocators {
  lazy val root: BufferAllocator = new RootAllocator(Long.MaxValue)
  def child(name: String): BufferAllocator = root.newChildAllocator(name, 0, Long.MaxValue)
}
