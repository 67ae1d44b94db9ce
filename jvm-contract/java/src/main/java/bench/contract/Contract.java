package bench.contract;

import java.math.BigInteger;

/** The contract's arithmetic and parameter rules (CONTRACT.md): the framework-free part every JVM server shares. */
public final class Contract {
    public static final int FACTORIAL_MAX = 5000;
    public static final int FIBONACCI_MAX = 45;
    /** /v1/tweets' first id; a process-wide counter adds one per request. */
    public static final long FIRST_TWEET_ID = 1000000L;

    private Contract() {}

    /** The `param` query parameter (null when missing) as an integer in 0..max, or -1: missing, not an integer,
     *  out of range. Integer.parseInt's syntax, which Scala's toInt and toIntOption share. */
    public static int param(String raw, int max) {
        if (raw == null) return -1;
        try {
            int n = Integer.parseInt(raw);
            return n >= 0 && n <= max ? n : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** The body of the 400 for a bad `param`. */
    public static String paramError(int max) {
        return "param must be an integer from 0 to " + max;
    }

    public static BigInteger factorial(int n) {
        BigInteger product = BigInteger.ONE;
        for (int i = 2; i <= n; i++) product = product.multiply(BigInteger.valueOf(i));
        return product;
    }

    /** Naive double recursion on purpose: this is the CPU-bound test. fib(0) = fib(1) = 1. */
    public static long fibonacci(int n) {
        return n < 2 ? 1 : fibonacci(n - 1) + fibonacci(n - 2);
    }
}
