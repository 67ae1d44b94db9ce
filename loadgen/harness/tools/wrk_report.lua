-- Prints wrk's summary and latency distribution as one JSON line (prefix WRK_JSON) for the harness.
-- wrk 4.1's Lua API gives no per-request data and no access to its per-µs counters (latency[i] is not served, #latency
-- counts distinct values), only latency:percentile(p), exact to the µs over its samples. spectrum_us is that quantile
-- function at 1,098 levels: every 0.1 % to 99 %, every 0.01 % to 99.99 %, every 0.001 % to 99.999 %, and the max.
done = function(summary, latency, requests)
  local quantiles = {}
  for p = 1, 100 do
    quantiles[#quantiles + 1] = string.format("[%d,%.3f]", p, latency:percentile(p) / 1000)
  end
  local spectrum = {}
  local function level(p)
    spectrum[#spectrum + 1] = string.format("[%.3f,%d]", p, latency:percentile(p))
  end
  for i = 1, 990 do level(i / 10) end
  for i = 9901, 9999 do level(i / 100) end
  for i = 99991, 99999 do level(i / 1000) end
  spectrum[#spectrum + 1] = string.format("[100,%d]", latency.max)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"duration_us":%d,"requests":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"max":%d,"mean":%.2f,"stdev":%.2f},"quantiles_ms":[%s],"spectrum_us":[%s]}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.max, latency.mean, latency.stdev, table.concat(quantiles, ","),
    table.concat(spectrum, ",")))
end
