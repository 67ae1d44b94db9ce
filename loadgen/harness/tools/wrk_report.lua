-- Prints wrk's summary and latency distribution as one JSON line (prefix WRK_JSON) for the harness.
done = function(summary, latency, requests)
  local quantiles = {}
  for p = 1, 100 do
    quantiles[#quantiles + 1] = string.format("[%d,%.3f]", p, latency:percentile(p) / 1000)
  end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"duration_us":%d,"requests":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"max":%d,"mean":%.2f,"stdev":%.2f},"quantiles_ms":[%s]}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.max, latency.mean, latency.stdev, table.concat(quantiles, ",")))
end
