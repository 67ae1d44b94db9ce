package bench

import java.util.concurrent.atomic.AtomicLong

import scala.concurrent.duration._
import scala.concurrent.{Await, ExecutionContext, Future}
import scala.util.{Failure, Success}

import akka.actor.{ActorRef, ActorSystem, Props}
import akka.io.IO
import akka.pattern.ask
import akka.util.Timeout
import bench.contract.{Contract, ServerEnv}
import bench.contract.JsonProtocol._
import com.typesafe.config.ConfigFactory
import spray.can.Http
import spray.client.pipelining._
import spray.http.MediaTypes.`text/html`
import spray.http.StatusCodes.{BadGateway, BadRequest, NotFound, OK}
import spray.http.{ContentTypes, HttpEntity, Uri}
import spray.json._
import spray.routing.{HttpServiceActor, RejectionHandler, Route}

/** The routes, run by one spray-routing actor that spray-can hands every request to.
  * @param upstreamConnector spray-client's host connector: a pool of keep-alive connections to the upstream */
class SprayService(upstreamConnector: ActorRef, upstreamPath: Uri) extends HttpServiceActor {
  private implicit val executionContext: ExecutionContext = context.dispatcher
  // /fibonacci's own thread pool (see application.conf)
  private val fibonacciContext: ExecutionContext = context.system.dispatchers.lookup("fibonacci-dispatcher")

  private val nextTweetId = new AtomicLong(Contract.FIRST_TWEET_ID)

  private implicit val upstreamTimeout: Timeout = Timeout(10.seconds)
  private val fetchUpstream = sendReceive(upstreamConnector)

  // the contract answers 404 to anything it does not list (spray would say 405 to a POST, for instance)
  private implicit val everythingElseIsNotFound: RejectionHandler = RejectionHandler {
    case _ => complete((NotFound, "Not Found"))
  }

  def receive: Receive = runRoute(route)

  // `complete` takes its argument by name: each expression below is evaluated per request
  val route: Route = get {
    path("id") {
      complete("spray")
    } ~
    path("hello") {
      complete("Hello World")
    } ~
    path("backend") {
      respondWithMediaType(`text/html`) {
        complete("<h1>Say hello to akka-http</h1>")
      }
    } ~
    path("v1" / "tweets") {
      complete(json(JsArray(Tweet(nextTweetId.getAndIncrement(), "author1", "Hello, World!").toJson)))
    } ~
    path("factorial") {
      withParam(Contract.FACTORIAL_MAX) { n => complete(Contract.factorial(n).toString) }
    } ~
    path("fibonacci") {
      // CPU-bound for up to seconds: off the dispatcher that serves the connections
      withParam(Contract.FIBONACCI_MAX) { n => complete(Future(Contract.fibonacci(n).toString)(fibonacciContext)) }
    } ~
    path("weather" / Segment) { _ =>
      onComplete(weather()) {
        case Success(reply) => complete(json(reply.toJson))
        case Failure(e) => complete((BadGateway, json(JsObject("error" -> JsString(s"upstream: ${e.getMessage}")))))
      }
    }
  }

  /** Fetch the upstream document through the pool, parse it, keep two fields. */
  private def weather(): Future[Weather] =
    fetchUpstream(Get(upstreamPath)).map {
      case response if response.status == OK => weatherOf(response.entity.data.toByteArray)
      case response =>
        throw new IllegalStateException(s"status ${response.status.intValue}")
    }

  private def withParam(max: Int)(inner: Int => Route): Route =
    parameter("param".?) { raw =>
      Contract.param(raw.orNull, max) match {
        case -1 => complete((BadRequest, Contract.paramError(max)))
        case n => inner(n)
      }
    }

  private def json(value: JsValue): HttpEntity = HttpEntity(ContentTypes.`application/json`, value.compactPrint)
}

object SprayServer {
  def main(args: Array[String]): Unit = {
    val env = new ServerEnv(8083)
    import env.{host, port}
    val upstream = Uri(env.upstreamUrl)

    // fibonacci-dispatcher sized to the CPUs the server is pinned to; the default dispatcher (akka-io's TCP actors,
    // spray-can's connection actors and the routes) to two threads per CPU: on one core, wrk -t1 -c64 /hello
    // interleaved with one instance of each, one thread served 16-28k req/s and two 33-46k (ab -c 100 without
    // keep-alive 2.9-5.2k against 4.0-8.7k); 4 or 8 threads were no faster. With one, every message the selector
    // thread posts has to wake the pool's only worker (akka 2.6's servers, with an internal dispatcher, do not gain).
    implicit val system: ActorSystem = ActorSystem("spray-server",
      ConfigFactory.parseString(env.coreSizedDispatchers("akka", 2)).withFallback(ConfigFactory.load()))
    import system.dispatcher
    implicit val setupTimeout: Timeout = Timeout(10.seconds)

    // the host connector only opens connections when requests arrive: this works with the upstream down
    val upstreamConnector = Await.result(
      IO(Http) ? Http.HostConnectorSetup(upstream.authority.host.address, upstream.effectivePort),
      setupTimeout.duration) match { case Http.HostConnectorInfo(connector, _) => connector }

    val service = system.actorOf(Props(new SprayService(upstreamConnector, upstream.toRelative)), "routes")
    // backlog 4096: ab -c 1000 opens its connections in one burst
    (IO(Http) ? Http.Bind(service, host, port, backlog = 4096)).onComplete {
      case Success(Http.Bound(_)) =>
        println(env.listening("spray"))
      case other =>
        System.err.println(s"spray: cannot bind $host:$port: $other")
        System.exit(1)
    }

    // SIGTERM: stop the actor system (closing the listener and connections), then the JVM exits
    sys.addShutdownHook {
      system.terminate()
      Await.ready(system.whenTerminated, 5.seconds)
    }
  }
}
