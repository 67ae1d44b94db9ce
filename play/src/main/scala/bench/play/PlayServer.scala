package bench.play

import java.net.URI
import play.api.{Configuration, Environment, Mode}
import play.api.routing.Router
import play.core.server.{DefaultPekkoHttpServerComponents, ServerConfig}

/**
 * The benchmark contract (CONTRACT.md) on Play 3.0, embedded as a library: DefaultPekkoHttpServerComponents wires
 * Play on the Pekko HTTP backend with compile-time DI and no HTTP filters (it mixes in NoHttpFiltersComponents).
 */
object PlayServer {

  def main(args: Array[String]): Unit = {
    val host = sys.env.getOrElse("HOST", "127.0.0.1")
    val port = sys.env.get("PORT").map(_.toInt).getOrElse(8085)
    val cores = sys.env.get("SERVER_CORES").map(_.toInt).getOrElse(Runtime.getRuntime.availableProcessors)
    val upstreamUrl = URI.create(sys.env.getOrElse("UPSTREAM_URL", "http://127.0.0.1:8000/weather.json"))

    val env = Environment.simple(mode = Mode.Prod)
    // application.conf plus the pool sizes that follow SERVER_CORES. Pekko's default dispatcher (which runs
    // the HTTP streams and the actions) would otherwise use at least 8 threads whatever the CPU count.
    val config = Configuration(
      "pekko.actor.default-dispatcher.fork-join-executor.parallelism-min" -> cores,
      "pekko.actor.default-dispatcher.fork-join-executor.parallelism-max" -> cores,
      "contexts.cpu-bound.thread-pool-executor.fixed-pool-size" -> cores
    ).withFallback(Configuration.load(env))

    val components = new DefaultPekkoHttpServerComponents {
      override lazy val environment: Environment = env
      override lazy val configuration: Configuration = config
      // one configuration for both the server (play.server.*) and the application (pekko.*, play.http.*)
      override lazy val serverConfig: ServerConfig =
        ServerConfig(port = Some(port), address = host, mode = Mode.Prod).copy(configuration = config)
      override lazy val router: Router = new Routes(
        defaultActionBuilder,
        new WeatherClient(upstreamUrl)(actorSystem),
        cpuBound = actorSystem.dispatchers.lookup("contexts.cpu-bound")
      )(executionContext).router
    }

    // Starts the application and binds. SIGTERM runs Pekko's CoordinatedShutdown hook, which unbinds and stops.
    components.server
    println(
      s"play listening on http://$host:$port (SERVER_CORES=$cores, " +
        s"availableProcessors=${Runtime.getRuntime.availableProcessors}, upstream=$upstreamUrl)")
  }
}
