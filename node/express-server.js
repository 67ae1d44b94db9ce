'use strict';
// The contract (../CONTRACT.md) on Express 4, written the way Express apps are written.

const express = require('express');
const { runCluster } = require('./cluster');
const {
  FACTORIAL_MAX, FIBONACCI_MAX, parseParam, paramError, factorial, fibonacci, tweets, fetchWeather,
} = require('./contract');

const NAME = 'express';
const app = express();
// The usual benchmark settings: no X-Powered-By header, no ETag hashed over every body.
app.disable('x-powered-by');
app.set('etag', false);

// The routes answer through Node's own res.writeHead().end(), as Express's TechEmpower entry does: Express still
// routes every request (its router, query parser and init middleware); its res.send/res.json helpers (type lookup,
// charset, req.fresh, HEAD handling Node already does) are left out, as there (node/PROFILE.md has the figures).
// Node sends Date itself; Server is set on every answer here, 404s and errors included.
const TEXT = 'text/plain; charset=utf-8';
const HTML = 'text/html; charset=utf-8';
const JSON_TYPE = 'application/json';

function answer(res, status, type, body) {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), Server: NAME });
  res.end(body);
}

app.get('/id', (req, res) => answer(res, 200, TEXT, NAME));
app.get('/hello', (req, res) => answer(res, 200, TEXT, 'Hello World'));
app.get('/backend', (req, res) => answer(res, 200, HTML, '<h1>Say hello to akka-http</h1>'));
// Serialized per request with JSON.stringify, the serializer res.json() uses.
app.get('/v1/tweets', (req, res) => answer(res, 200, JSON_TYPE, JSON.stringify(tweets())));

app.get('/factorial', (req, res) => {
  const n = parseParam(req.query.param, FACTORIAL_MAX);
  if (n === null) return answer(res, 400, TEXT, paramError(FACTORIAL_MAX));
  answer(res, 200, TEXT, factorial(n).toString());
});

app.get('/fibonacci', (req, res) => {
  const n = parseParam(req.query.param, FIBONACCI_MAX);
  if (n === null) return answer(res, 400, TEXT, paramError(FIBONACCI_MAX));
  // Computed in the handler, on the event loop: a worker has one JavaScript thread, so the honest
  // equivalent of "CPU work on a worker thread" is the worker process itself. While it
  // recurses, this worker serves nothing else: that is what the CPU-bound test measures.
  answer(res, 200, TEXT, String(fibonacci(n)));
});

// Express 4 does not catch rejected promises, so the handler catches its own.
app.get('/weather/:city', async (req, res) => {
  try {
    answer(res, 200, JSON_TYPE, JSON.stringify(await fetchWeather()));
  } catch (err) {
    answer(res, 502, JSON_TYPE, JSON.stringify({ error: err.message }));
  }
});

// Anything else: 404; a request Express itself rejects (a malformed path's decoding, say): its status.
app.use((req, res) => answer(res, 404, TEXT, 'Not Found\n'));
app.use((err, req, res, next) => answer(res, err.status || 500, TEXT, `${err.message}\n`));

runCluster({ name: NAME, defaultPort: 8082, handler: app });
