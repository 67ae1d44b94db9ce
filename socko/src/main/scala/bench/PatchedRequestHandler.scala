package bench

import java.io.IOException

import io.netty.channel.ChannelHandlerContext
import io.netty.handler.codec.http.{HttpHeaders, HttpRequest}
import io.netty.util.ReferenceCountUtil
import org.mashupbots.socko.events.SockoEvent
import org.mashupbots.socko.webserver.{RequestHandler => SockoRequestHandler, WebServer}

/** Socko's per-connection handler, with three changes:
  *  - a request without a Host header gets a default one first. HTTP/1.0 clients may leave Host out (and so
  *    does the placeholder request Netty makes of a line it cannot parse), but Socko refuses to build a request
  *    event without one: it would drop the connection unanswered;
  *  - the request is released once routed;
  *  - a connection the client reset is closed quietly: Socko logs each one as an error with a stack trace,
  *    and load generators reset all their connections when they stop. */
class PatchedRequestHandler(server: WebServer, routes: PartialFunction[SockoEvent, Unit])
    extends SockoRequestHandler(server, routes) {

  override def channelRead(ctx: ChannelHandlerContext, message: AnyRef): Unit = {
    message match {
      case request: HttpRequest if HttpHeaders.getHost(request, "").isEmpty => HttpHeaders.setHost(request, "localhost")
      case _ =>
    }
    // Socko never releases the requests Netty hands it (Netty 4 counts references); once routed, no handler
    // reads a request's body (the actors get the request event, whose headers and path are plain objects)
    try super.channelRead(ctx, message) finally ReferenceCountUtil.release(message)
  }

  override def exceptionCaught(ctx: ChannelHandlerContext, cause: Throwable): Unit = cause match {
    case _: IOException => ctx.close()
    case _ => super.exceptionCaught(ctx, cause)
  }
}
