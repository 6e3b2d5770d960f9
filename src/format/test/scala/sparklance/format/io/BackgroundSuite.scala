package sparklance.format.io

import java.io.IOException
import java.util.concurrent.{CountDownLatch, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable

class BackgroundSuite extends AnyFunSuite {
  test("work under way is not called off: its result still comes, for the caller to release") {
    val (running, finish) = (new CountDownLatch(1), new CountDownLatch(1))
    val work = ForwardingStorage.onOwnThread { () => running.countDown(); assert(finish.await(10, TimeUnit.SECONDS)); "opened" }
    assert(running.await(10, TimeUnit.SECONDS))
    assert(!work.cancel())
    finish.countDown()
    assert(work.result == "opened")
  }

  test("work not started yet is called off and never runs, on another thread or on the caller's") {
    val runs = new AtomicInteger()
    val later = Background.later(() => runs.incrementAndGet())
    assert(later.cancel())
    intercept[java.util.concurrent.CancellationException](later.result)
    val gate = new CountDownLatch(1)
    var runner: Thread = null
    // Started by an executor that runs it only once the gate opens: called off before that.
    val queued = Background.started[Int] { c =>
      val task = new java.util.concurrent.FutureTask[Int](c)
      runner = new Thread(() => { gate.await(10, TimeUnit.SECONDS); task.run() })
      runner.start()
      task
    }(() => runs.incrementAndGet())
    assert(queued.cancel())
    gate.countDown()
    runner.join(10000)
    assert(!queued.cancel())
    assert(runs.get == 0)
  }

  test("all: the results in order; should one fail, every other that ran is released and the first failure thrown") {
    assert(Background.all(Seq(1, 2, 3).map(i => ForwardingStorage.onOwnThread(() => i * 10)))(_ => fail()) == Seq(10, 20, 30))
    for (failing <- 0 until 3) {
      val (released, started) = (mutable.Set.empty[Int], new CountDownLatch(3))
      // Every work waits until all three run, so the failure meets the others under way.
      val works = (0 until 3).map(i => ForwardingStorage.onOwnThread { () =>
        started.countDown()
        assert(started.await(10, TimeUnit.SECONDS))
        if (i == failing) throw new IOException(s"work $i failed") else i
      })
      val e = intercept[IOException](Background.all(works)(i => released.synchronized(released += i)))
      assert(e.getMessage == s"work $failing failed")
      assert(released == (0 until 3).filterNot(_ == failing).toSet)
    }
    // On the caller's thread, the works after a failure never run.
    val ran = mutable.Buffer.empty[Int]
    intercept[IOException](Background.all((0 until 3).map(i => Background.later { () =>
      ran += i; if (i == 1) throw new IOException("second") else i
    }))(_ => ()))
    assert(ran == Seq(0, 1))
  }
}
