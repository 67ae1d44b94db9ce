package bench

import java.nio.charset.StandardCharsets.UTF_8

import scala.collection.mutable

import io.netty.util.AttributeKey
import org.mashupbots.socko.events.{HttpRequestEvent, HttpResponseStatus}

/** The answer to one request, written with the headers the contract asks of every response, in request order.
  * Create it on the connection's event-loop thread (in the route), in the order the requests arrived. */
final class Reply(event: HttpRequestEvent) {
  private val order = ResponseOrder.of(event)
  private val ticket = order.nextTicket()

  def apply(status: HttpResponseStatus, contentType: String, body: String): Unit = {
    val bytes = body.getBytes(UTF_8)
    // Socko adds Content-Length (and Connection: keep-alive) only to keep-alive responses, and no Server header
    val headers = Map("Server" -> "socko", "Content-Length" -> bytes.length.toString)
    order.complete(ticket) { event.response.write(status, bytes, contentType, headers) }
  }

  def ok(contentType: String, body: String): Unit = apply(HttpResponseStatus.OK, contentType, body)
}

/** Socko hands each request to an actor and writes whichever response is ready first, but pipelined requests
  * must be answered in order. One per connection: a response that is ready early waits for those before it. */
final class ResponseOrder {
  private var issued = 0L
  private var written = 0L
  private val ready = mutable.LongMap.empty[() => Unit]

  def nextTicket(): Long = synchronized { issued += 1; issued - 1 }

  def complete(ticket: Long)(write: => Unit): Unit = synchronized {
    ready(ticket) = () => write
    while (ready.contains(written)) {
      ready.remove(written).foreach(_.apply())
      written += 1
    }
  }
}

object ResponseOrder {
  private val key = AttributeKey.valueOf[ResponseOrder]("bench.ResponseOrder")

  /** The connection's ResponseOrder; called on its event-loop thread only, so get-or-create needs no lock. */
  def of(event: HttpRequestEvent): ResponseOrder = {
    val attribute = event.context.channel.attr(key)
    Option(attribute.get).getOrElse { val created = new ResponseOrder; attribute.set(created); created }
  }
}
