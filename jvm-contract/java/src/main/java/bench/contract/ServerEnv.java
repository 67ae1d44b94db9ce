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

    /** HOCON for the Akka-family servers (`root` = akka or pekko): one default-dispatcher thread per core for the
     *  connections and routes, and as many for /fibonacci's own dispatcher so it can use every core. */
    public String coreSizedDispatchers(String root) {
        return root + ".actor.default-dispatcher.fork-join-executor {\n"
            + "  parallelism-min = " + cores + "\n"
            + "  parallelism-max = " + cores + "\n"
            + "}\n"
            + "fibonacci-dispatcher.thread-pool-executor.fixed-pool-size = " + cores + "\n";
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
