package bench.finagle

import io.netty.channel.{EventLoop, EventLoopGroup}
import scala.jdk.CollectionConverters._

/** One `A` per event loop of `group`, made by `make(loop)`; `current` is the calling loop's own (the first one's when
  * called off the loops, e.g. from a FuturePool).
  */
final class LoopLocal[A](loops: IndexedSeq[EventLoop], values: IndexedSeq[A]) {
  def current: A = {
    var i = 0
    while (i < loops.length) {
      if (loops(i).inEventLoop()) return values(i)
      i += 1
    }
    values(0)
  }

  def all: Seq[A] = values
}

object LoopLocal {
  def apply[A](group: EventLoopGroup)(make: EventLoop => A): LoopLocal[A] = {
    val loops = group.iterator().asScala.collect { case loop: EventLoop => loop }.toIndexedSeq
    require(loops.nonEmpty, s"no event loops in $group")
    new LoopLocal(loops, loops.map(make))
  }
}
