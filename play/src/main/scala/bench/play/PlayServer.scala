package bench.play

import bench.contract.ServerEnv
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
    val serverEnv = new ServerEnv(8085)
    import serverEnv.{cores, host, port}

    val env = Environment.simple(mode = Mode.Prod)
    // application.conf plus the pool sizes that follow SERVER_CORES. Pekko's default dispatcher (which runs
    // the HTTP streams and the actions) would otherwise use at least 8 threads whatever the CPU count, and its
    // internal one (pekko-io's TCP actors: every accept, read and write) at least 4 (ServerEnv says what that costs).
    val config = Configuration(
      "pekko.actor.default-dispatcher.fork-join-executor.parallelism-min" -> cores,
      "pekko.actor.default-dispatcher.fork-join-executor.parallelism-max" -> cores,
      "pekko.actor.internal-dispatcher.fork-join-executor.parallelism-min" -> cores,
      "pekko.actor.internal-dispatcher.fork-join-executor.parallelism-max" -> cores,
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
        new WeatherClient(URI.create(serverEnv.upstreamUrl))(actorSystem),
        cpuBound = actorSystem.dispatchers.lookup("contexts.cpu-bound")
      )(executionContext).router
    }

    // Starts the application and binds. SIGTERM runs Pekko's CoordinatedShutdown hook, which unbinds and stops.
    components.server
    println(serverEnv.listening("play"))
  }
}
