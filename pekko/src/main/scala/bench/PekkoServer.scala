package bench

import java.util.concurrent.atomic.AtomicLong

import scala.concurrent.duration._
import scala.concurrent.{ExecutionContext, Future}
import scala.util.{Failure, Success}

import org.apache.pekko.actor.ActorSystem
import org.apache.pekko.http.scaladsl.{Http, ServerBuilder}
import org.apache.pekko.http.scaladsl.marshallers.sprayjson.SprayJsonSupport._
import org.apache.pekko.http.scaladsl.model._
import org.apache.pekko.http.scaladsl.server.Directives._
import org.apache.pekko.http.scaladsl.server.Route
import org.apache.pekko.http.scaladsl.unmarshalling.Unmarshal
import bench.contract.{Contract, ServerEnv}
import bench.contract.JsonProtocol._
import com.typesafe.config.ConfigFactory
import spray.json._

object PekkoServer {
  def main(args: Array[String]): Unit = {
    val env = new ServerEnv(8087)
    import env.{host, port}

    // one dispatcher pool for connections and routes, two threads per core, and fibonacci-dispatcher sized to the
    // CPUs the server is pinned to (ServerEnv.onePoolDispatchers says why); a -D system property still wins over them
    // (another setting measured without a rebuild, through JAVA_TOOL_OPTIONS)
    implicit val system: ActorSystem = ActorSystem("pekko-server",
      ConfigFactory.systemProperties()
        .withFallback(ConfigFactory.parseString(env.onePoolDispatchers("pekko")))
        .withFallback(ConfigFactory.load()))

    val handler = new PekkoServer(Uri(env.upstreamUrl)).handler
    serve(Http().newServerAt(host, port), handler, s"$host:$port", env.listening("pekko"))

    // H2C_PORT set (CONTRACT.md): the same route (same counter, same upstream pool) also speaks cleartext HTTP/2
    // with prior knowledge on a port of its own. HTTP/2 is switched on for that binding only: the global
    // pekko.http.server.preview.enable-http2 would also put the HTTP/1.1 port behind a protocol switch that sniffs
    // every new connection for the HTTP/2 preface. No extra artifact: HTTP/2 is part of pekko-http-core.
    sys.env.get("H2C_PORT").map(_.toInt).foreach { h2cPort =>
      val h2c = Http().newServerAt(host, h2cPort)
        .adaptSettings(s => s.withPreviewServerSettings(s.previewServerSettings.withEnableHttp2(true)))
      serve(h2c, handler, s"$host:$h2cPort", s"pekko h2c (HTTP/2 prior knowledge) listening on http://$host:$h2cPort/")
    }
  }

  /** Binds with the asynchronous handler: HTTP/2 is served only by `bind`, never by `bindFlow`. */
  private def serve(server: ServerBuilder, handler: HttpRequest => Future[HttpResponse], address: String, listening: String)(
      implicit system: ActorSystem): Unit = {
    import system.dispatcher
    server.bind(handler).onComplete {
      case Success(binding) =>
        // SIGTERM runs coordinated shutdown (a JVM shutdown hook): stop accepting, let in-flight requests finish
        binding.addToCoordinatedShutdown(hardTerminationDeadline = 3.seconds)
        println(listening)
      case Failure(e) =>
        System.err.println(s"pekko: cannot bind $address: $e")
        system.terminate()
    }
  }
}

final class PekkoServer(upstream: Uri)(implicit system: ActorSystem) {
  import system.dispatcher

  private val tweetIds = new AtomicLong(Contract.FIRST_TWEET_ID)
  private val fibonacciContext: ExecutionContext = system.dispatchers.lookup("fibonacci-dispatcher")

  // built once: a directive's inner route is a by-name argument, evaluated again on every request (pekko-http's
  // "Directives" page), so `get { concat(...) }` built every path matcher and directive anew for each request
  private val routes: Route = concat(
    path("id") {
      complete("pekko")
    },
    path("backend") {
      complete(HttpEntity(ContentTypes.`text/html(UTF-8)`, "<h1>Say hello to akka-http</h1>")) // the contract's body, the same for every server
    },
    path("v1" / "tweets") {
      complete(List(Tweet(tweetIds.getAndIncrement(), "author1", "Hello, World!")))
    },
    path("factorial") {
      intParam(Contract.FACTORIAL_MAX) { n =>
        complete(Contract.factorial(n).toString)
      }
    },
    path("fibonacci") {
      intParam(Contract.FIBONACCI_MAX) { n =>
        // CPU-bound: computed on its own dispatcher, never on the one serving the connections
        complete(Future(Contract.fibonacci(n).toString)(fibonacciContext))
      }
    },
    path("weather" / Segment) { _ =>
      onComplete(fetchWeather()) {
        case Success(weather) => complete(weather)
        case Failure(e) =>
          complete(StatusCodes.BadGateway, JsObject("error" -> JsString(s"upstream failed: ${e.getMessage}")))
      }
    }
  )

  private val routeHandler: HttpRequest => Future[HttpResponse] = Route.toFunction(get(routes))

  // GET /hello is answered ahead of the routing DSL, as the framework's TechEmpower entry answers /plaintext: one
  // HttpResponse value built at start (its status line, Server and Date headers still rendered per request). The
  // DSL's handler took 1.7 of the 45 us a keep-alive request took under the profiler (akka/PROFILE.md). Any other
  // method or path, HEAD and /hello/ included, goes to the DSL, which answers them as before (405, 404).
  private val hello = Future.successful(HttpResponse(entity = HttpEntity(ContentTypes.`text/plain(UTF-8)`, "Hello World")))

  val handler: HttpRequest => Future[HttpResponse] = {
    case HttpRequest(HttpMethods.GET, Uri.Path("/hello"), _, _, _) => hello
    case request => routeHandler(request)
  }

  /** The `param` query parameter as an integer in 0..max, or 400. */
  private def intParam(max: Int)(inner: Int => Route): Route =
    parameter("param".optional) { raw =>
      Contract.param(raw.orNull, max) match {
        case -1 => complete(StatusCodes.BadRequest, Contract.paramError(max))
        case n => inner(n)
      }
    }

  /** One request through pekko-http's pooled keep-alive client (host-connection-pool). */
  private def fetchWeather(): Future[Weather] =
    Http().singleRequest(HttpRequest(uri = upstream)).flatMap { response =>
      if (response.status.isSuccess) Unmarshal(response.entity).to[UpstreamWeather].map(_.toWeather)
      else {
        response.discardEntityBytes()
        Future.failed(new IllegalStateException(s"status ${response.status.intValue}"))
      }
    }
}
