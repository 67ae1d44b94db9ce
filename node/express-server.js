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

// Node sends Date itself but no Server header.
app.use((req, res, next) => {
  res.set('Server', NAME);
  next();
});

// res.send() adds "charset=utf-8" to the text types, res.json() serializes with JSON.stringify.
app.get('/id', (req, res) => res.type('text').send(NAME));
app.get('/hello', (req, res) => res.type('text').send('Hello World'));
app.get('/backend', (req, res) => res.type('html').send('<h1>Say hello to akka-http</h1>'));
app.get('/v1/tweets', (req, res) => res.json(tweets()));

app.get('/factorial', (req, res) => {
  const n = parseParam(req.query.param, FACTORIAL_MAX);
  if (n === null) return res.status(400).type('text').send(paramError(FACTORIAL_MAX));
  res.type('text').send(factorial(n).toString());
});

app.get('/fibonacci', (req, res) => {
  const n = parseParam(req.query.param, FIBONACCI_MAX);
  if (n === null) return res.status(400).type('text').send(paramError(FIBONACCI_MAX));
  // Computed in the handler, on the event loop: a worker has one JavaScript thread, so the honest
  // equivalent of "CPU work on a worker thread" is the worker process itself. While it
  // recurses, this worker serves nothing else: that is what the CPU-bound test measures.
  res.type('text').send(String(fibonacci(n)));
});

// Express 4 does not catch rejected promises, so the handler catches its own.
app.get('/weather/:city', async (req, res) => {
  try {
    res.json(await fetchWeather());
  } catch (err) {
    res.status(502).json({ error: err.message });
  }
});

// Anything else falls through to Express's own 404.
runCluster({ name: NAME, defaultPort: 8082, handler: app });
