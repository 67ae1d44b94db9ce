package bench.finagle

import bench.contract.ServerEnv
import com.twitter.concurrent.NamedPoolThreadFactory
import com.twitter.finagle.Http
import com.twitter.finagle.http.{Request, Response}
import com.twitter.finagle.netty4.param.WorkerPool
import com.twitter.finagle.server.Listener
import com.twitter.finagle.stack.nilStack
import com.twitter.finagle.stats.NullStatsReceiver
import com.twitter.finagle.tracing.NullTracer
import com.twitter.util.{Await, Closable, Duration, FuturePool}
import java.net.{InetSocketAddress, URI}
import java.util.concurrent.Executors

/** The benchmark contract (CONTRACT.md) on a plain Finagle `Http.server`: no TwitterServer, so no admin port and no stats. */
object FinagleServer {

  def main(args: Array[String]): Unit = {
    val env = new ServerEnv(8084)
    import env.{cores, host, port}
    val upstreamUrl = URI.create(env.upstreamUrl)

    // Finagle's own event-loop count, max(8, 2 x CPUs), but at most four per CPU we are pinned to: one CPU gets 4, two
    // get 8, four or more Finagle's 2 x CPUs. On one CPU (finagle/PROFILE.md, 3 Dec) new connections went 0.71 of the
    // entry's with one loop, 0.85 with two, 0.92 with four; four lost no scenario of the bench its rate, where eight
    // cost weather c256 42 % (its upstream clients share the loops). Keep-alive p99 grows with the loops per CPU: 4, 7,
    // 16 and 35 ms for 1, 2, 4 and 8. This global flag is read from a system property the first time Finagle builds
    // its worker pool, so it must be set before any server or client exists.
    if (System.getProperty("com.twitter.finagle.netty4.numWorkers") == null)
      System.setProperty("com.twitter.finagle.netty4.numWorkers", math.min(math.max(8, 2 * cores), 4 * cores).toString)

    // Finagle's rule: never block or burn CPU on the Netty I/O threads, they serve every connection. /fibonacci runs on
    // a FuturePool over a fixed pool of SERVER_CORES threads: as many as the CPUs, so CPU-bound jobs queue instead of
    // time-slicing each other (an unbounded pool would only add threads competing for the same cores).
    val cpuPool = FuturePool(Executors.newFixedThreadPool(cores, new NamedPoolThreadFactory("fibonacci", makeDaemons = true)))

    // One upstream client per event loop, its connections on that loop, as Netty's proxy example binds its outbound
    // channel to the inbound one's loop: a /weather request is served, sent upstream and answered on one thread.
    // One client over all the loops handed every other request to another loop and back (weather c1 8-10 % slower).
    val upstreamBase = Http.client
      .withLabel("upstream")
      .withStatsReceiver(NullStatsReceiver)
      .withTracer(NullTracer)
      .withNoHttp2 // nginx speaks HTTP/1.1; skip the h2c upgrade attempt
      .withRequestTimeout(Duration.fromSeconds(5)) // a hung upstream becomes a 502, not a hung request
    val upstreamAddress = s"${upstreamUrl.getHost}:${portOf(upstreamUrl)}"
    val upstreams = LoopLocal(upstreamBase.params[WorkerPool].eventLoopGroup) { loop =>
      upstreamBase.configured(WorkerPool(loop)).newService(upstreamAddress, "upstream")
    }
    val weather = new WeatherClient(() => upstreams.current, upstreamUrl)

    val service = ServerHeaders.andThen(new Routes(weather, cpuPool))
    val serverBase = Http.server
      // No server stack modules, as Finagle's own TechEmpower entry serves (issue 48). With stats and tracing off
      // they only pass each request along: tracing, stats, timeout/deadline/admission/concurrency limits (none set),
      // Dtab and Finagle-Ctx header contexts, nack-to-503. What the contract needs is not in the stack: Server and
      // Date come from ServerHeaders, 404 from Routes, a failed handler's 500 from the HTTP dispatcher, 400 for a
      // malformed request from the Netty pipeline, and HTTP/2 is a listener/transport parameter.
      .withStack(nilStack[Request, Response])
      .withStatsReceiver(NullStatsReceiver)
      .withTracer(NullTracer)
      .withCompressionLevel(0) // no gzip handler: the contract's responses are tiny and clients ask none
      // accept-queue length, room for ab's 1000-connection burst (Linux caps it at net.core.somaxconn)
      .configured(Listener.Backlog(Some(4096)))

    val server = serverBase
      .withLabel("finagle")
      .withNoHttp2 // the contract is HTTP/1.x: no h2c upgrade handler in the pipeline
      .serve(new InetSocketAddress(host, port), service)

    println(env.listening("finagle"))

    // H2C_PORT set (CONTRACT.md): a second server on its own port, the same service (routes, counter, upstream
    // client), with HTTP/2. On a cleartext port Finagle's HTTP/2 server takes the connection preface (prior
    // knowledge) as well as the h2c Upgrade; the HTTP/1.1 port above keeps withNoHttp2, so none of its connections
    // go through the preface check.
    val h2cServer = sys.env.get("H2C_PORT").map(_.toInt).map { h2cPort =>
      val h2c = serverBase
        .withLabel("finagle-h2c")
        .withHttp2
        .serve(new InetSocketAddress(host, h2cPort), service)
      println(s"finagle h2c (HTTP/2 prior knowledge) listening on http://$host:$h2cPort/")
      h2c
    }

    // SIGTERM runs the shutdown hooks, then the JVM exits: stop accepting, give in-flight requests a moment.
    sys.addShutdownHook {
      Await.ready(Closable.all(server +: h2cServer.toSeq: _*).close(Duration.fromSeconds(2)))
      Await.ready(Closable.all(upstreams.all: _*).close())
    }
    Await.ready(server)
  }

  private def portOf(url: URI): Int =
    if (url.getPort != -1) url.getPort else if (url.getScheme == "https") 443 else 80
}
