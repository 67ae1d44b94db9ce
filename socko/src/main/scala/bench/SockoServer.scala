package bench

import java.util.concurrent.atomic.AtomicLong

import scala.concurrent.Await
import scala.concurrent.duration._

import akka.actor.{ActorSystem, Props}
import akka.io.IO
import akka.pattern.ask
import akka.routing.RoundRobinPool
import akka.util.Timeout
import bench.contract.{Contract, ServerEnv}
import com.typesafe.config.ConfigFactory
import org.mashupbots.socko.routes._
import org.mashupbots.socko.webserver.{HttpConfig, TcpConfig, WebServer, WebServerConfig}
import spray.can.Http
import spray.http.Uri

object SockoServer {
  import Requests._

  def main(args: Array[String]): Unit = {
    val env = new ServerEnv(8088)
    import env.{cores, host, port}
    val upstream = Uri(env.upstreamUrl)

    // Socko creates its Netty event loops with Netty's default size (2 x CPUs): one per core instead.
    // Read when Netty's event-loop class loads, so set before anything touches Netty.
    System.setProperty("io.netty.eventLoopThreads", cores.toString)

    // the default dispatcher (the handler actors) and fibonacci-dispatcher sized to the CPUs the server is pinned to
    implicit val system: ActorSystem = ActorSystem("socko-server",
      ConfigFactory.parseString(env.coreSizedDispatchers("akka")).withFallback(ConfigFactory.load()))
    implicit val setupTimeout: Timeout = Timeout(10.seconds)

    // the host connector only opens connections when requests arrive: this works with the upstream down
    val upstreamConnector = Await.result(
      IO(Http) ? Http.HostConnectorSetup(upstream.authority.host.address, upstream.effectivePort),
      setupTimeout.duration) match { case Http.HostConnectorInfo(connector, _) => connector }

    // Socko's style: the routes (run on Netty's event loop) only pick a handler; actors do the work.
    // A round-robin pool of handlers per kind of work, one handler per core.
    val tweetIds = new AtomicLong(Contract.FIRST_TWEET_ID)
    val handlers = system.actorOf(RoundRobinPool(cores).props(Props(new QuickHandler(tweetIds))), "handlers")
    val fibonacciHandlers = system.actorOf(
      RoundRobinPool(cores).props(Props[FibonacciHandler].withDispatcher("fibonacci-dispatcher")), "fibonacci")
    val weatherHandlers = system.actorOf(
      RoundRobinPool(cores).props(Props(new WeatherHandler(upstreamConnector, upstream.toRelative))), "weather")

    val routes = Routes({
      case HttpRequest(request) =>
        val reply = new Reply(request)
        request match {
          // Netty turns a request line it cannot parse into a placeholder request marked as failed
          case _ if request.nettyHttpRequest.getDecoderResult.isFailure => handlers ! BadRequest(reply)
          case GET(Path("/id")) => handlers ! Text(reply, TextPlain, "socko")
          case GET(Path("/hello")) => handlers ! Text(reply, TextPlain, "Hello World")
          case GET(Path("/backend")) =>
            handlers ! Text(reply, "text/html; charset=utf-8", "<h1>Say hello to akka-http</h1>")
          case GET(Path("/v1/tweets")) => handlers ! Tweets(reply)
          case GET(Path("/factorial")) => handlers ! Factorial(reply, request.endPoint.getQueryString("param"))
          case GET(Path("/fibonacci")) => fibonacciHandlers ! Fibonacci(reply, request.endPoint.getQueryString("param"))
          case GET(PathSegments("weather" :: city :: Nil)) => weatherHandlers ! FetchWeather(reply)
          // without this, Socko answers an unmatched request with a bare 404 and an error log entry
          case _ => handlers ! NotFound(reply)
        }
    })

    val config = WebServerConfig(
      serverName = "socko", hostname = host, port = port,
      // no gzip: every server answers the same bytes (and Reply sets Content-Length from the uncompressed body)
      http = HttpConfig(compressibleContentTypes = Nil),
      // no acceptBackLog: Socko sets it on accepted sockets, where it means nothing (and Netty warns per
      // connection); the listener keeps Netty's default backlog, the kernel's somaxconn
      tcp = TcpConfig(noDelay = Some(true)))
    val webServer = new WebServer(config, system, server => new PatchedRequestHandler(server, routes))
    webServer.start()
    println(env.listening("socko"))

    // SIGTERM: close the listener and connections, then stop the actor system; the JVM then exits
    sys.addShutdownHook {
      webServer.stop()
      system.shutdown()
      system.awaitTermination(5.seconds)
    }
  }
}
