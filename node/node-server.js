'use strict';
// The contract (../CONTRACT.md) on Node's core http module: a switch on the path, no framework. The same handler
// also serves cleartext HTTP/2 through the http2 module's compatibility API (req.url, res.writeHead, res.end).

const http2 = require('node:http2');
const { runCluster } = require('./cluster');
const {
  FACTORIAL_MAX, FIBONACCI_MAX, parseParam, paramError, factorial, fibonacci, tweets, fetchWeather,
} = require('./contract');

const NAME = 'node';
const TEXT = 'text/plain; charset=utf-8';
const HTML = 'text/html; charset=utf-8';
const JSON_TYPE = 'application/json';

// Core http (and http2's compatibility API) sends Date itself but no Server header.
function send(res, status, contentType, body) {
  res.writeHead(status, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(body),
    Server: NAME,
  });
  res.end(body);
}

function queryParam(url, queryStart) {
  return queryStart < 0 ? undefined : new URLSearchParams(url.slice(queryStart + 1)).get('param');
}

// /weather/{city}: exactly one non-empty segment after /weather/.
function isWeatherPath(path) {
  return path.startsWith('/weather/') && path.length > '/weather/'.length && path.indexOf('/', '/weather/'.length) < 0;
}

async function weather(res) {
  try {
    send(res, 200, JSON_TYPE, JSON.stringify(await fetchWeather()));
  } catch (err) {
    send(res, 502, JSON_TYPE, JSON.stringify({ error: err.message }));
  }
}

// The request-target as origin-form. An absolute-form target (`GET http://host/hello`, which RFC 9112 §3.2.2 says a
// server MUST accept) carries scheme and authority before the path: it is parsed, as Express's router parses it.
// Origin-form, what every load tool sends, costs one comparison.
function originForm(url) {
  if (url.charCodeAt(0) === 47 /* / */) return url;
  try {
    const parsed = new URL(url);
    return parsed.pathname + parsed.search;
  } catch {
    return url; // `*` or an authority-form: no route matches it
  }
}

function handle(req, res) {
  // HEAD is answered like GET; Node leaves the body out by itself.
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 404, TEXT, 'Not Found\n');
  const url = originForm(req.url);
  const queryStart = url.indexOf('?');
  const path = queryStart < 0 ? url : url.slice(0, queryStart);
  switch (path) {
    case '/id':
      return send(res, 200, TEXT, NAME);
    case '/hello':
      return send(res, 200, TEXT, 'Hello World');
    case '/backend':
      return send(res, 200, HTML, '<h1>Say hello to akka-http</h1>');
    case '/v1/tweets':
      return send(res, 200, JSON_TYPE, JSON.stringify(tweets()));
    case '/factorial': {
      const n = parseParam(queryParam(url, queryStart), FACTORIAL_MAX);
      if (n === null) return send(res, 400, TEXT, paramError(FACTORIAL_MAX));
      return send(res, 200, TEXT, factorial(n).toString());
    }
    case '/fibonacci': {
      const n = parseParam(queryParam(url, queryStart), FIBONACCI_MAX);
      if (n === null) return send(res, 400, TEXT, paramError(FIBONACCI_MAX));
      // Computed right here, on the event loop: a worker has one JavaScript thread, so the honest
      // equivalent of "CPU work on a worker thread" is the worker process itself. While it
      // recurses, this worker serves nothing else: that is what the CPU-bound test measures.
      return send(res, 200, TEXT, String(fibonacci(n)));
    }
    default:
      if (isWeatherPath(path)) return weather(res);
      return send(res, 404, TEXT, 'Not Found\n');
  }
}

// h2c: HTTP/2 with prior knowledge, on H2C_PORT (when set). Node's http2 server speaks only HTTP/2, so it cannot share
// PORT with the HTTP/1.1 server: a port of its own, as for every server in this repository.
runCluster({ name: NAME, defaultPort: 8080, handler: handle, createH2cServer: () => http2.createServer(handle) });
