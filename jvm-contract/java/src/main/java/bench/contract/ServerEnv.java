package bench.contract;

/** What the harness hands every server in its environment (CONTRACT.md, "How a server is started"). */
public final class ServerEnv {
    public final String host;
    public final int port;
    /** SERVER_CORES when it is a positive integer, else the CPUs this process may run on. */
    public final int cores;
    public final String upstreamUrl;

    public ServerEnv(int defaultPort) {
        host = env("HOST", "127.0.0.1");
        port = Integer.parseInt(env("PORT", Integer.toString(defaultPort)));
        cores = positiveOr(System.getenv("SERVER_CORES"), Runtime.getRuntime().availableProcessors());
        upstreamUrl = env("UPSTREAM_URL", "http://127.0.0.1:8000/weather.json");
    }

    /** The line a server logs once it listens. */
    public String listening(String server) {
        return server + " listening on http://" + host + ":" + port + "/ (SERVER_CORES=" + cores
            + ", availableProcessors=" + Runtime.getRuntime().availableProcessors() + ", upstream " + upstreamUrl + ")";
    }

    /** HOCON for spray and socko (Akka 2.3 and 2.4): one thread per core for the default dispatcher (connections'
     *  streams and routes), and as many for /fibonacci's own dispatcher so it can use every core. Their Akka has no
     *  internal dispatcher; akka-http's and pekko-http's take onePoolDispatchers. */
    public String coreSizedDispatchers(String root) {
        return coreSizedDispatchers(root, 1);
    }

    /** As above with `defaultThreadsPerCore` default-dispatcher threads per core (see SprayServer for why spray
     *  wants two). */
    public String coreSizedDispatchers(String root, int defaultThreadsPerCore) {
        return forkJoin(root, "default-dispatcher", cores * defaultThreadsPerCore) + fibonacciThreads();
    }

    /** HOCON for akka-http and pekko-http (`root` = akka or pekko): one pool, two threads per core, for everything a
     *  connection does. The internal dispatcher (akka-io's TCP actors: every accept, read and write) is the default
     *  one, as TechEmpower's akka-http and pekko-http entries configure it, so a new connection no longer crosses
     *  between two pools' threads (on one core, pekko: 12.3 context switches a connection with two pools, 6.8 with
     *  this). Two threads per core, not the entries' one: with one, keep-alive lost a fifth (pekko/PROFILE.md). */
    public String onePoolDispatchers(String root) {
        return forkJoin(root, "default-dispatcher", cores * 2)
            + root + ".actor.internal-dispatcher = \"" + root + ".actor.default-dispatcher\"\n" + fibonacciThreads();
    }

    private static String forkJoin(String root, String dispatcher, int threads) {
        return root + ".actor." + dispatcher + ".fork-join-executor {\n"
            + "  parallelism-min = " + threads + "\n"
            + "  parallelism-max = " + threads + "\n"
            + "}\n";
    }

    private String fibonacciThreads() {
        return "fibonacci-dispatcher.thread-pool-executor.fixed-pool-size = " + cores + "\n";
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value != null ? value : fallback;
    }

    private static int positiveOr(String value, int fallback) {
        try {
            int n = Integer.parseInt(value);
            return n > 0 ? n : fallback;
        } catch (NumberFormatException e) { // also null
            return fallback;
        }
    }
}
